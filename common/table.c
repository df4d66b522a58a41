/* The results-table printer every lab uses (see workbook.h). */
#include "workbook.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_COLUMNS 16
#define MAX_CELL 48

struct wb_table {
    char name[64];
    char title[640];
    int columns;
    char header[MAX_COLUMNS][MAX_CELL];
    int rows, capacity;
    char (*cells)[MAX_COLUMNS][MAX_CELL];
};

/* Splits "a|b|c" into at most MAX_COLUMNS cells, trimming spaces. */
static int split_cells(const char *text, char cells[MAX_COLUMNS][MAX_CELL])
{
    int count = 0;
    const char *start = text;
    for (;;) {
        const char *end = strchr(start, '|');
        size_t len = end ? (size_t)(end - start) : strlen(start);
        while (len && *start == ' ')
            start++, len--;
        while (len && start[len - 1] == ' ')
            len--;
        if (count == MAX_COLUMNS)
            wb_fail("wb_table: more than %d columns in \"%s\"", MAX_COLUMNS, text);
        snprintf(cells[count], MAX_CELL, "%.*s", (int)len, start);
        count++;
        if (!end)
            return count;
        start = end + 1;
    }
}

wb_table *wb_table_new(const char *name, const char *title, const char *columns)
{
    wb_table *table = calloc(1, sizeof *table);
    if (!table)
        wb_fail("wb_table_new: out of host memory");
    snprintf(table->name, sizeof table->name, "%s", name);
    snprintf(table->title, sizeof table->title, "%s", title);
    table->columns = split_cells(columns, table->header);
    return table;
}

/* Appends one CSV line to $WB_RESULTS_DIR/<name>.csv, with the header first
 * when the file is new. Cells never contain commas or quotes in practice;
 * quote them anyway so the file always parses. */
static void write_csv_row(const wb_table *table, char cells[MAX_COLUMNS][MAX_CELL])
{
    const char *dir = getenv("WB_RESULTS_DIR");
    char path[1024];
    struct stat st;
    if (!dir || !*dir)
        return;
    snprintf(path, sizeof path, "%s/%s.csv", dir, table->name);
    bool is_new = stat(path, &st) != 0;
    FILE *file = fopen(path, "a");
    if (!file)
        wb_fail("cannot append results to %s (WB_RESULTS_DIR)", path);
    for (int pass = is_new ? 0 : 1; pass < 2; pass++) {
        char(*row)[MAX_CELL] = pass == 0 ? (char(*)[MAX_CELL])table->header : cells;
        for (int c = 0; c < table->columns; c++)
            fprintf(file, "%s\"%s\"", c ? "," : "", row[c]);
        fputc('\n', file);
    }
    fclose(file);
}

void wb_table_row(wb_table *table, const char *format, ...)
{
    char text[MAX_COLUMNS * MAX_CELL];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    if (table->rows == table->capacity) {
        table->capacity = table->capacity ? 2 * table->capacity : 8;
        table->cells = realloc(table->cells, sizeof *table->cells * (size_t)table->capacity);
        if (!table->cells)
            wb_fail("wb_table_row: out of host memory");
    }
    char(*cells)[MAX_CELL] = table->cells[table->rows];
    memset(cells, 0, sizeof table->cells[0]);
    if (split_cells(text, cells) != table->columns)
        wb_fail("wb_table_row: \"%s\" does not have the %d columns of table %s", text,
                table->columns, table->name);
    table->rows++;
    write_csv_row(table, cells);
}

void wb_table_print(const wb_table *table, FILE *out)
{
    int width[MAX_COLUMNS];
    for (int c = 0; c < table->columns; c++) {
        width[c] = (int)strlen(table->header[c]);
        for (int r = 0; r < table->rows; r++) {
            int len = (int)strlen(table->cells[r][c]);
            if (len > width[c])
                width[c] = len;
        }
    }
    fprintf(out, "\n%s\n", table->title);
    for (int r = -1; r < table->rows; r++) {
        const char(*row)[MAX_CELL] = r < 0 ? table->header : table->cells[r];
        /* First column left-aligned (a name), the numbers right-aligned. */
        for (int c = 0; c < table->columns; c++)
            fprintf(out, c ? " | %*s" : "%-*s", width[c], row[c]);
        fputc('\n', out);
        if (r < 0) {
            for (int c = 0; c < table->columns; c++) {
                fputs(c ? "-+-" : "", out);
                for (int i = 0; i < width[c]; i++)
                    fputc('-', out);
            }
            fputc('\n', out);
        }
    }
    fflush(out);
}

void wb_table_free(wb_table *table)
{
    if (!table)
        return;
    free(table->cells);
    free(table);
}
