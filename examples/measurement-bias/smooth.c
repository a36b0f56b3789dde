/* A 3-point smoothing filter. -O3 vectorises it behind a run-time check that dst and src do not
 * overlap; -O2's cheaper vectoriser does not add such checks and leaves it scalar. */
void smooth(unsigned short *dst, const unsigned char *src, int n)
{
    for (int i = 1; i < n - 1; i++)
        dst[i] = (unsigned short)(src[i - 1] + 2 * src[i] + src[i + 1]);
}
