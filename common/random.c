/* Reproducible inputs (see workbook.h): splitmix64, seeded from $WB_SEED. */
#include "workbook.h"

#include <errno.h>
#include <stdlib.h>

#define DEFAULT_SEED 20261122u

uint64_t wb_seed(void)
{
    const char *text = getenv("WB_SEED");
    if (text && *text) {
        char *end;
        errno = 0;
        unsigned long long value = strtoull(text, &end, 0);
        if (errno || *end)
            wb_fail("WB_SEED=\"%s\" is not a number (use decimal or 0x-prefixed hex)", text);
        return value;
    }
    return DEFAULT_SEED;
}

wb_rng wb_rng_from_seed(uint64_t seed)
{
    wb_rng rng = {seed};
    return rng;
}

wb_rng wb_rng_for(const char *stream)
{
    /* FNV-1a of the stream name, mixed into the run's seed. */
    uint64_t hash = 1469598103934665603ull;
    for (const char *c = stream; *c; c++)
        hash = (hash ^ (unsigned char)*c) * 1099511628211ull;
    return wb_rng_from_seed(wb_seed() ^ hash);
}

uint64_t wb_rng_u64(wb_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int wb_rng_int(wb_rng *rng, int lo, int hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - (int64_t)lo) + 1;
    return (int)((int64_t)lo + (int64_t)(wb_rng_u64(rng) % span));
}

float wb_rng_float(wb_rng *rng, float lo, float hi)
{
    /* 24 random bits: every value is an exact float in [0, 1). */
    float unit = (float)(wb_rng_u64(rng) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * unit;
}

void wb_fill_ints(int *out, size_t n, int lo, int hi, wb_rng *rng)
{
    for (size_t i = 0; i < n; i++)
        out[i] = wb_rng_int(rng, lo, hi);
}

void wb_fill_floats(float *out, size_t n, float lo, float hi, wb_rng *rng)
{
    for (size_t i = 0; i < n; i++)
        out[i] = wb_rng_float(rng, lo, hi);
}
