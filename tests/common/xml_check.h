/* xml_check.h - a small, strict well-formedness checker for XML (SVG
 * files, and the SVG inlined in the HTML report): one root element; tags
 * balanced and properly nested; names well formed; every attribute quoted,
 * given once per element, with no '<' in its value; every '&' the start of
 * a valid reference (&amp; &lt; &gt; &quot; &apos; &#N; &#xH;); no control
 * characters but tab, newline and carriage return; comments, processing
 * instructions (the XML declaration first only) and CDATA sections closed;
 * nothing but white space, comments and processing instructions outside
 * the root. No DTDs (`<!DOCTYPE` is refused: SVG needs none).
 *
 * Not a validator: it knows nothing of SVG's elements. Header-only, like
 * fixtures.h. Shared by tests/unit/test_report.c and
 * tests/cli/test_cli_experiment.c. */
#ifndef RLT_TESTS_XML_CHECK_H
#define RLT_TESTS_XML_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define XML_CHECK_MAX_DEPTH 256
#define XML_CHECK_MAX_NAME 128

typedef struct xml_checker {
    const char *text, *p;
    char *err;
    size_t err_cap;
} xml_checker;

static inline bool xml_fail(xml_checker *x, const char *what)
{
    snprintf(x->err, x->err_cap, "at byte %zu: %s (near '%.20s')", (size_t)(x->p - x->text), what, x->p);
    return false;
}

static inline bool xml_is_name_start(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c >= 0x80;
}

static inline bool xml_is_name_char(unsigned char c)
{
    return xml_is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static inline bool xml_is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static inline void xml_skip_space(xml_checker *x)
{
    while (xml_is_space(*x->p)) x->p++;
}

/* Reads a name into buf; false when there is none. */
static inline bool xml_name(xml_checker *x, char *buf)
{
    if (!xml_is_name_start((unsigned char)*x->p)) return xml_fail(x, "expected a name");
    size_t n = 0;
    while (xml_is_name_char((unsigned char)*x->p)) {
        if (n + 1 >= XML_CHECK_MAX_NAME) return xml_fail(x, "name too long");
        buf[n++] = *x->p++;
    }
    buf[n] = '\0';
    return true;
}

/* A reference after '&': a predefined entity or a character reference. */
static inline bool xml_reference(xml_checker *x)
{
    static const char *const entities[] = {"amp;", "lt;", "gt;", "quot;", "apos;"};
    x->p++; /* '&' */
    for (size_t i = 0; i < sizeof entities / sizeof entities[0]; i++)
        if (strncmp(x->p, entities[i], strlen(entities[i])) == 0) {
            x->p += strlen(entities[i]);
            return true;
        }
    if (*x->p == '#') {
        x->p++;
        bool is_hex = *x->p == 'x';
        if (is_hex) x->p++;
        int n = 0;
        while ((*x->p >= '0' && *x->p <= '9') ||
               (is_hex && ((*x->p >= 'a' && *x->p <= 'f') || (*x->p >= 'A' && *x->p <= 'F')))) {
            x->p++;
            n++;
        }
        if (n == 0 || n > 8 || *x->p != ';') return xml_fail(x, "bad character reference");
        x->p++;
        return true;
    }
    return xml_fail(x, "'&' that starts no valid reference (&amp; &lt; &gt; &quot; &apos; &#N;)");
}

static inline bool xml_char_ok(xml_checker *x)
{
    unsigned char c = (unsigned char)*x->p;
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return xml_fail(x, "control character");
    return true;
}

/* Skips up to and past `end`; false when it never comes. */
static inline bool xml_until(xml_checker *x, const char *end, const char *what)
{
    const char *found = strstr(x->p, end);
    if (!found) return xml_fail(x, what);
    for (; x->p < found; x->p++)
        if (!xml_char_ok(x)) return false;
    x->p = found + strlen(end);
    return true;
}

/* After "<!--": the comment, which may not hold "--". */
static inline bool xml_comment(xml_checker *x)
{
    const char *end = strstr(x->p, "--");
    if (!end) return xml_fail(x, "unterminated comment");
    if (end[2] != '>') return xml_fail(x, "'--' inside a comment");
    return xml_until(x, "-->", "unterminated comment");
}

/* After '<' of a start tag: name, attributes, '>' or '/>'. */
static inline bool xml_start_tag(xml_checker *x, char *name, bool *out_is_empty)
{
    char attrs[64][XML_CHECK_MAX_NAME];
    int n_attrs = 0;
    if (!xml_name(x, name)) return false;
    for (;;) {
        bool had_space = xml_is_space(*x->p);
        xml_skip_space(x);
        if (*x->p == '>') {
            x->p++;
            *out_is_empty = false;
            return true;
        }
        if (x->p[0] == '/' && x->p[1] == '>') {
            x->p += 2;
            *out_is_empty = true;
            return true;
        }
        if (!had_space) return xml_fail(x, "expected white space, '>' or '/>' after the name or attribute");
        char attr[XML_CHECK_MAX_NAME];
        if (!xml_name(x, attr)) return false;
        for (int i = 0; i < n_attrs; i++)
            if (strcmp(attrs[i], attr) == 0) return xml_fail(x, "attribute given twice");
        if (n_attrs >= 64) return xml_fail(x, "too many attributes");
        memcpy(attrs[n_attrs++], attr, sizeof attr);
        xml_skip_space(x);
        if (*x->p != '=') return xml_fail(x, "attribute without '='");
        x->p++;
        xml_skip_space(x);
        char quote = *x->p;
        if (quote != '"' && quote != '\'') return xml_fail(x, "attribute value not quoted");
        x->p++;
        while (*x->p != quote) {
            if (*x->p == '\0') return xml_fail(x, "unterminated attribute value");
            if (*x->p == '<') return xml_fail(x, "'<' in an attribute value");
            if (*x->p == '&') {
                if (!xml_reference(x)) return false;
                continue;
            }
            if (!xml_char_ok(x)) return false;
            x->p++;
        }
        x->p++;
    }
}

/* Checks `text`; on failure writes why (and where) into err. */
static inline bool xml_check(const char *text, char *err, size_t err_cap)
{
    xml_checker x = {.text = text, .p = text, .err = err, .err_cap = err_cap};
    static char stack[XML_CHECK_MAX_DEPTH][XML_CHECK_MAX_NAME];
    int depth = 0;
    bool has_root = false, is_first = true;
    if (err_cap) err[0] = '\0';
    while (*x.p) {
        if (*x.p == '<') {
            if (strncmp(x.p, "<?", 2) == 0) {
                bool is_decl = strncmp(x.p, "<?xml", 5) == 0 && (xml_is_space(x.p[5]) || x.p[5] == '?');
                if (is_decl && !is_first) return xml_fail(&x, "XML declaration not at the very start");
                x.p += 2;
                char target[XML_CHECK_MAX_NAME];
                if (!xml_name(&x, target) || !xml_until(&x, "?>", "unterminated processing instruction"))
                    return false;
            } else if (strncmp(x.p, "<!--", 4) == 0) {
                x.p += 4;
                if (!xml_comment(&x)) return false;
            } else if (strncmp(x.p, "<![CDATA[", 9) == 0) {
                if (depth == 0) return xml_fail(&x, "CDATA outside the root element");
                x.p += 9;
                if (!xml_until(&x, "]]>", "unterminated CDATA section")) return false;
            } else if (strncmp(x.p, "<!", 2) == 0) {
                return xml_fail(&x, "declaration (<!DOCTYPE ...) not accepted");
            } else if (x.p[1] == '/') {
                x.p += 2;
                char name[XML_CHECK_MAX_NAME];
                if (!xml_name(&x, name)) return false;
                xml_skip_space(&x);
                if (*x.p != '>') return xml_fail(&x, "expected '>' ending an end tag");
                if (depth == 0) return xml_fail(&x, "end tag without a start tag");
                if (strcmp(stack[depth - 1], name) != 0) return xml_fail(&x, "end tag does not match the open element");
                depth--;
                x.p++;
            } else {
                if (depth == 0 && has_root) return xml_fail(&x, "a second root element");
                x.p++;
                char name[XML_CHECK_MAX_NAME];
                bool is_empty = false;
                if (!xml_start_tag(&x, name, &is_empty)) return false;
                has_root = true;
                if (!is_empty) {
                    if (depth >= XML_CHECK_MAX_DEPTH) return xml_fail(&x, "nested too deep");
                    memcpy(stack[depth++], name, sizeof name);
                }
            }
        } else if (*x.p == '&') {
            if (depth == 0) return xml_fail(&x, "text outside the root element");
            if (!xml_reference(&x)) return false;
        } else {
            if (depth == 0 && !xml_is_space(*x.p)) return xml_fail(&x, "text outside the root element");
            if (strncmp(x.p, "]]>", 3) == 0) return xml_fail(&x, "']]>' in text");
            if (!xml_char_ok(&x)) return false;
            x.p++;
        }
        is_first = false;
    }
    if (depth > 0) {
        snprintf(err, err_cap, "at the end: element <%s> not closed", stack[depth - 1]);
        return false;
    }
    if (!has_root) {
        snprintf(err, err_cap, "no root element");
        return false;
    }
    return true;
}

#endif /* RLT_TESTS_XML_CHECK_H */
