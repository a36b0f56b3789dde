/* Data the scan reads, and the input generator: a separate object, so the link order moves
 * the table and the code relative to each other. */
const unsigned weights[256] = {
#define ROW(b) b * 2654435761u, (b + 1) * 2654435761u, (b + 2) * 2654435761u, (b + 3) * 2654435761u
#define ROWS16(b) ROW(b), ROW(b + 4), ROW(b + 8), ROW(b + 12)
    ROWS16(0u), ROWS16(16u), ROWS16(32u), ROWS16(48u), ROWS16(64u), ROWS16(80u), ROWS16(96u), ROWS16(112u),
    ROWS16(128u), ROWS16(144u), ROWS16(160u), ROWS16(176u), ROWS16(192u), ROWS16(208u), ROWS16(224u), ROWS16(240u),
};

/* Pseudo-random bytes, mostly 0-3 so that runs of equal bytes are common (branches mispredict). */
void fill(unsigned char *buf, int n, unsigned seed)
{
    unsigned x = seed;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (unsigned char)((x >> 16) & ((x >> 28) ? 0xffu : 0x3u));
    }
}
