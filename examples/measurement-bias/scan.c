/* A branchy pass over a byte buffer, like a compressor's inner loop: a running hash through a
 * weight table, a histogram, and a count of repeated bytes. Little for -O3 to improve. */
extern const unsigned weights[256];

unsigned scan(const unsigned char *buf, int n, unsigned *hist)
{
    unsigned h = 2166136261u, runs = 0;
    for (int i = 1; i < n; i++) {
        unsigned char c = buf[i];
        h = (h ^ weights[c]) * 16777619u;
        hist[c]++;
        if (c == buf[i - 1])
            runs++;
        else if (c < 64)
            h ^= runs;
    }
    return h + runs;
}
