/*
 * svg.c - line plots written as SVG 1.1 text (rlt_svg_plot): per series a
 * line and a translucent band, axes with "nice" ticks (1, 2 or 5 times a
 * power of ten), grid, labels, a title, a legend and an optional dashed
 * reference line. Self-contained: no fonts, styles or images from
 * elsewhere, so the same text is a file of its own or goes inline into the
 * HTML report. And the escaping of text for XML and HTML (rlt_xml_escape).
 */
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define WIDTH 820
#define HEIGHT 500
#define MARGIN_LEFT 78
#define MARGIN_RIGHT 24
#define MARGIN_TOP 48
#define MARGIN_BOTTOM 58

/* Okabe and Ito's colour-blind-safe palette, yellow left out (too light on
 * white), then two greys. */
static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                      "#e69f00", "#56b4e9", "#000000", "#888888"};

const char *rlt_plot_colour(int i) { return palette[(unsigned)i % RLT_ARRAY_LEN(palette)]; }

void rlt_xml_escape(rlt_str *out, const char *text)
{
    const char *run = text;
    for (const char *p = text; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        const char *rep = NULL;
        switch (ch) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default:
            if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7f) rep = "?";
            break;
        }
        if (!rep) continue;
        rlt_str_appendn(out, run, (size_t)(p - run));
        rlt_str_append(out, rep);
        run = p + 1;
    }
    rlt_str_append(out, run);
}

/* A tick step of about range / target_ticks: 1, 2 or 5 times a power of 10. */
static double nice_step(double range, int target_ticks)
{
    if (!(range > 0)) return 1;
    double raw = range / target_ticks;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nice * mag;
}

typedef struct frame {
    double x_min, x_max, y_min, y_max;
    double left, right, top, bottom; /* pixels of the plotting area */
} frame;

static double px(const frame *f, double x)
{
    return f->left + (x - f->x_min) / (f->x_max - f->x_min) * (f->right - f->left);
}

static double py(const frame *f, double y)
{
    return f->bottom - (y - f->y_min) / (f->y_max - f->y_min) * (f->bottom - f->top);
}

/* A tick label: whole numbers without decimals, others with as few as
 * the step needs. */
static void tick_label(double v, double step, char *buf, size_t cap)
{
    if (fabs(v) < step * 1e-9) v = 0;
    int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    snprintf(buf, cap, "%.*f", RLT_MIN(decimals, 6), v);
}

static void axes(const rlt_plot *p, const frame *f, double x_step, double y_step, rlt_str *out)
{
    char label[64];
    rlt_str_append(out, "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (double y = f->y_min; y <= f->y_max + y_step * 1e-9; y += y_step)
        rlt_str_printf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", f->left, py(f, y), f->right,
                       py(f, y));
    for (double x = f->x_min; x <= f->x_max + x_step * 1e-9; x += x_step)
        rlt_str_printf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", px(f, x), f->top, px(f, x),
                       f->bottom);
    rlt_str_append(out, "</g>\n");
    rlt_str_printf(out,
                   "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#444444\" "
                   "stroke-width=\"1\"/>\n",
                   f->left, f->top, f->right - f->left, f->bottom - f->top);
    rlt_str_append(out, "<g fill=\"#222222\" font-size=\"12\">\n");
    for (double y = f->y_min; y <= f->y_max + y_step * 1e-9; y += y_step) {
        tick_label(y, y_step, label, sizeof label);
        rlt_str_printf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#444444\"/>\n", f->left - 5,
                       py(f, y), f->left, py(f, y));
        rlt_str_printf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n", f->left - 8, py(f, y) + 4,
                       label);
    }
    for (double x = f->x_min; x <= f->x_max + x_step * 1e-9; x += x_step) {
        tick_label(x, x_step, label, sizeof label);
        rlt_str_printf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#444444\"/>\n", px(f, x),
                       f->bottom, px(f, x), f->bottom + 5);
        rlt_str_printf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n", px(f, x), f->bottom + 19,
                       label);
    }
    rlt_str_append(out, "</g>\n");
    rlt_str_printf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"13\">",
                   (f->left + f->right) / 2, (double)HEIGHT - 14);
    rlt_xml_escape(out, p->x_label ? p->x_label : "");
    rlt_str_append(out, "</text>\n");
    rlt_str_printf(out,
                   "<text x=\"18\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"13\" "
                   "transform=\"rotate(-90 18 %.2f)\">",
                   (f->top + f->bottom) / 2, (f->top + f->bottom) / 2);
    rlt_xml_escape(out, p->y_label ? p->y_label : "");
    rlt_str_append(out, "</text>\n");
}

/* The x of point k of series s: its x array's, else k + 1. */
static double xk(const rlt_plot_series *s, int k) { return s->x ? s->x[k] : (double)(k + 1); }

static const char *dashes(int i) { return (i / (int)RLT_ARRAY_LEN(palette)) % 2 ? " stroke-dasharray=\"7,3\"" : ""; }

static void band(const frame *f, const rlt_plot_series *s, int i, rlt_str *out)
{
    if (s->n <= 0 || !s->lo || !s->hi) return;
    rlt_str_printf(out, "<polygon fill=\"%s\" fill-opacity=\"0.18\" stroke=\"none\" points=\"", rlt_plot_colour(i));
    for (int k = 0; k < s->n; k++) rlt_str_printf(out, "%s%.2f,%.2f", k ? " " : "", px(f, xk(s, k)), py(f, s->hi[k]));
    for (int k = s->n - 1; k >= 0; k--) rlt_str_printf(out, " %.2f,%.2f", px(f, xk(s, k)), py(f, s->lo[k]));
    rlt_str_append(out, "\"/>\n");
}

static void line(const frame *f, const rlt_plot_series *s, int i, rlt_str *out)
{
    if (s->n <= 0) return;
    rlt_str_printf(out,
                   "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\"%s "
                   "points=\"",
                   rlt_plot_colour(i), dashes(i));
    for (int k = 0; k < s->n; k++) rlt_str_printf(out, "%s%.2f,%.2f", k ? " " : "", px(f, xk(s, k)), py(f, s->y[k]));
    if (s->n == 1) rlt_str_printf(out, " %.2f,%.2f", px(f, xk(s, 0)) + 1, py(f, s->y[0]));
    rlt_str_append(out, "\"/>\n");
}

/* The legend, in the lower right corner of the plotting area, where
 * best-so-far curves (rising, then flat near the top) leave room; in the
 * upper right one for falling curves (is_legend_top). */
static void legend(const rlt_plot *p, const frame *f, rlt_str *out)
{
    int n_rows = p->n_series + (p->band_note ? 1 : 0) + (p->reference_y > 0 ? 1 : 0);
    if (n_rows == 0) return;
    size_t longest = 0;
    for (int i = 0; i < p->n_series; i++)
        longest = RLT_MAX(longest, strlen(p->series[i].label ? p->series[i].label : ""));
    if (p->band_note) longest = RLT_MAX(longest, strlen(p->band_note));
    if (p->reference_y > 0) longest = RLT_MAX(longest, strlen(p->reference_label ? p->reference_label : ""));
    double w = 46 + 6.6 * (double)RLT_MIN(longest, 80), h = 10 + 18.0 * n_rows;
    double x = f->right - w - 10, y = p->is_legend_top ? f->top + 10 : f->bottom - h - 10;
    rlt_str_printf(out,
                   "<g font-size=\"12\">\n<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#ffffff\" "
                   "fill-opacity=\"0.9\" stroke=\"#bbbbbb\"/>\n",
                   x, y, w, h);
    double row = y + 18;
    for (int i = 0; i < p->n_series; i++, row += 18) {
        const char *col = rlt_plot_colour(i);
        if (p->series[i].lo && p->series[i].hi)
            rlt_str_printf(out,
                           "<rect x=\"%.2f\" y=\"%.2f\" width=\"26\" height=\"10\" fill=\"%s\" "
                           "fill-opacity=\"0.18\"/>\n",
                           x + 8, row - 9, col);
        rlt_str_printf(out,
                       "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                       x + 8, row - 4, x + 34, row - 4, col, dashes(i));
        rlt_str_printf(out, "<text x=\"%.2f\" y=\"%.2f\">", x + 40, row);
        rlt_xml_escape(out, p->series[i].label ? p->series[i].label : "");
        rlt_str_append(out, "</text>\n");
    }
    if (p->reference_y > 0) {
        rlt_str_printf(out,
                       "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#444444\" stroke-width=\"1\" "
                       "stroke-dasharray=\"6,4\"/>\n",
                       x + 8, row - 4, x + 34, row - 4);
        rlt_str_printf(out, "<text x=\"%.2f\" y=\"%.2f\">", x + 40, row);
        rlt_xml_escape(out, p->reference_label ? p->reference_label : "");
        rlt_str_append(out, "</text>\n");
        row += 18;
    }
    if (p->band_note) {
        rlt_str_printf(out, "<text x=\"%.2f\" y=\"%.2f\" fill=\"#555555\">", x + 8, row);
        rlt_xml_escape(out, p->band_note);
        rlt_str_append(out, "</text>\n");
    }
    rlt_str_append(out, "</g>\n");
}

void rlt_svg_plot(const rlt_plot *p, bool is_standalone, rlt_str *out)
{
    frame f = {.x_min = 0, .x_max = 1, .y_min = 0, .y_max = 0};
    for (int i = 0; i < p->n_series; i++) {
        const rlt_plot_series *s = &p->series[i];
        if (s->n > 0 && isfinite(xk(s, s->n - 1))) f.x_max = RLT_MAX(f.x_max, xk(s, s->n - 1));
        for (int k = 0; k < s->n; k++) {
            double top = s->hi ? RLT_MAX(s->hi[k], s->y[k]) : s->y[k];
            if (isfinite(top)) f.y_max = RLT_MAX(f.y_max, top);
        }
    }
    if (p->reference_y > 0 && isfinite(p->reference_y)) f.y_max = RLT_MAX(f.y_max, p->reference_y);
    if (!(f.y_max > 0)) f.y_max = 1;
    double y_step = nice_step(f.y_max * 1.04, 6), x_step = nice_step(f.x_max, 8);
    f.y_max = ceil(f.y_max * 1.04 / y_step) * y_step;
    f.x_max = ceil(f.x_max / x_step) * x_step;
    f.left = MARGIN_LEFT;
    f.right = WIDTH - MARGIN_RIGHT;
    f.top = MARGIN_TOP;
    f.bottom = HEIGHT - MARGIN_BOTTOM;

    if (is_standalone) rlt_str_append(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n");
    rlt_str_printf(out,
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
                   "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" role=\"img\">\n",
                   WIDTH, HEIGHT, WIDTH, HEIGHT);
    rlt_str_append(out, "<title>");
    rlt_xml_escape(out, p->title ? p->title : "");
    rlt_str_append(out, "</title>\n");
    rlt_str_printf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", WIDTH, HEIGHT);
    rlt_str_printf(out, "<text x=\"%.2f\" y=\"28\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">",
                   WIDTH / 2.0);
    rlt_xml_escape(out, p->title ? p->title : "");
    rlt_str_append(out, "</text>\n");
    axes(p, &f, x_step, y_step, out);
    /* every band, then the reference, then the lines: no band covers a line */
    for (int i = 0; i < p->n_series; i++) band(&f, &p->series[i], i, out);
    if (p->reference_y > 0 && isfinite(p->reference_y))
        rlt_str_printf(out,
                       "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#444444\" stroke-width=\"1\" "
                       "stroke-dasharray=\"6,4\"/>\n",
                       f.left, py(&f, p->reference_y), f.right, py(&f, p->reference_y));
    for (int i = 0; i < p->n_series; i++) line(&f, &p->series[i], i, out);
    legend(p, &f, out);
    rlt_str_append(out, "</svg>\n");
}
