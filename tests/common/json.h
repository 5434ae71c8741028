/* json.h - reading JSON in a test (the CLI's --json output, the API's JSON
 * text) with cJSON: parsing one object, and the number, string or boolean
 * of a key, each asserting (Criterion) that it is there and of its type,
 * so a test reads as what it checks. Keys are matched case-sensitively.
 * Header-only, like fixtures.h. Shared by tests/cli/test_cli.c,
 * test_cli_dataset.c, test_cli_experiment.c, test_cli_imitate.c,
 * test_cli_optimize.c, test_cli_records.c, test_cli_train.c and
 * test_cli_tune.c. */
#ifndef RLT_TESTS_JSON_H
#define RLT_TESTS_JSON_H

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdbool.h>
#include <string.h>

/* `text` parsed; it must be one JSON value. Free with cJSON_Delete. */
static inline cJSON *json_parse(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    cr_assert_not_null(j, "not one JSON value:\n%s", text);
    return j;
}

/* `text` parsed; it must be one JSON object. Free with cJSON_Delete. */
static inline cJSON *json_parse_object(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    cr_assert(cJSON_IsObject(j), "not one JSON object:\n%s", text);
    return j;
}

/* The same, and `text` must be one line (ending in its only newline). */
static inline cJSON *json_parse_object_line(const char *text)
{
    cJSON *j = json_parse_object(text);
    cr_assert_eq(strchr(text, '\n'), text + strlen(text) - 1, "more than one line:\n%s", text);
    return j;
}

/* The number at `key` of object o; it must be there. */
static inline double json_number_at(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsNumber(v), "no number '%s'", key);
    return v->valuedouble;
}

/* The string at `key` of object o (borrowed from o); it must be there. */
static inline const char *json_string_at(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsString(v), "no string '%s'", key);
    return v->valuestring;
}

/* The boolean at `key` of object o; it must be there. */
static inline bool json_bool_at(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsBool(v), "no boolean '%s'", key);
    return cJSON_IsTrue(v);
}

#endif /* RLT_TESTS_JSON_H */
