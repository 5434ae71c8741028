/*
 * json_number.h - numbers into cJSON trees exactly: the shortest text that
 * reads back as the same double (rlt_format_double), where cJSON's own
 * printer writes 15 digits whenever they read back within a few ulps, so
 * that a GFLOP/s figure printed by one command and read by another would
 * not compare equal. JSON has no inf or nan: they become null, as cJSON
 * writes them. Header-only, so that core itself needs no cJSON: the
 * modules that write JSON include it.
 */
#ifndef RLT_JSON_NUMBER_H
#define RLT_JSON_NUMBER_H

#include "core/core.h"

#include <cjson/cJSON.h>
#include <math.h>

static inline cJSON *rlt_json_number(double v)
{
    if (!isfinite(v)) return cJSON_CreateNull();
    char text[40];
    rlt_format_double(v, text, sizeof text);
    return cJSON_CreateRaw(text);
}

/* As cJSON_AddNumberToObject: the item added, NULL when out of memory. */
static inline cJSON *rlt_json_add_number(cJSON *object, const char *name, double v)
{
    cJSON *item = rlt_json_number(v);
    if (!item) return NULL;
    if (!cJSON_AddItemToObject(object, name, item)) {
        cJSON_Delete(item);
        return NULL;
    }
    return item;
}

#endif /* RLT_JSON_NUMBER_H */
