/* Lab 00, vector add: the entry points that the skeleton (labs/) and the
 * reference (solutions/) both define, and that test.c and bench.c call. */
#ifndef LAB_VECTOR_ADD_H
#define LAB_VECTOR_ADD_H

#ifdef __cplusplus
extern "C" {
#endif

/* c[i] = a[i] + b[i] for 0 <= i < n, all pointers in device memory, in
 * blocks of block_size threads (the lab: one thread per element; the
 * reference: four). Asynchronous: returns after the launch, which it has
 * checked. */
void vector_add(const float *a, const float *b, float *c, int n, int block_size);

#ifdef __cplusplus
}
#endif

#endif
