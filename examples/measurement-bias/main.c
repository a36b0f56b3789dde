/* The measured program: a branchy scan of a buffer plus a smoothing filter, repeated.
 *
 * Its data live on the stack (buf, out, hist), so where they sit depends on how much the
 * kernel put above them: the environment and the program's path, which a measurement context
 * varies (Mytkowicz et al., "Producing wrong data without doing anything obviously wrong!",
 * ASPLOS 2009). The hot code sits wherever the link order puts it. The program measures the
 * CPU time of its own loop (CLOCK_PROCESS_CPUTIME_ID: not the time it waited for a CPU on a
 * busy machine, nor exec and loading) and prints "loop: SECONDS s" and a checksum, so both
 * builds can be checked to agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 16384

unsigned scan(const unsigned char *buf, int n, unsigned *hist);
void smooth(unsigned short *dst, const unsigned char *src, int n);
void fill(unsigned char *buf, int n, unsigned seed);

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long reps = argc > 1 ? atol(argv[1]) : 3000;
    unsigned char buf[N];
    unsigned short out[N];
    unsigned hist[256] = {0};
    unsigned sum = 0;

    fill(buf, N, 12345u);
    double t0 = cpu_seconds();
    for (long r = 0; r < reps; r++) {
        sum += scan(buf, N, hist);
        smooth(out, buf, N / 4);  /* a quarter: -O3's vector code helps, but not by much */
        sum += out[r % (N / 4 - 2) + 1];
    }
    double t1 = cpu_seconds();
    printf("checksum: %u\nloop: %.6f s\n", sum, t1 - t0);
    return 0;
}
