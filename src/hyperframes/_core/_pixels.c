/* Three uint8 pixel kernels of the batch transforms (hyperframes.data.transforms), each
 * torchvision's float result computed per pixel without a float image, the GIL released:
 *
 * warp_affine(frames, maps, windows, planes, height, width, fill): in place, the bilinear warp
 * of every window's `planes` (H, W) planes by its own map (maps: `windows` x 6 float64, output pixel ->
 * source pixel, pixel centres at the integers), as torchvision's affine (grid_sample with zero
 * padding, then the fill blended by the share m of the pixel inside the frame:
 * m * (x - fill) + fill, rounded). The weights (in 1/16384, m folded in) are computed once per
 * window and reused for all its T * C planes, eight pixels a step with SSE2: within one level
 * of torchvision.
 *
 * hue_shift(frames, shifts, count, pixels): in place, the hue of `count` RGB frames (each
 * three planes of `pixels` uint8) turned by shifts[k] (a fraction of a turn; 0 skips the
 * frame), as torchvision's adjust_hue (RGB -> HSV, the hue turned, HSV -> RGB, to uint8 as
 * x / 255 * 255.999 truncated), in levels and with the hue in units of the chroma, so that
 * no division is needed: AVX2+FMA intrinsics where the CPU has them, else branch-free float
 * code that the compiler vectorises. The largest and smallest channel come out exact, the
 * third within one level.
 *
 * resize_linear(src, dst, flip): every (bh, bw) plane of src (T, C, bh, bw), any strides with
 * adjacent pixels, resized bilinearly into its (oh, ow) plane of dst (T, C, oh, ow), C-order,
 * mirrored left-right when flip: OpenCV's INTER_LINEAR on uint8 (the same weights, in 1/2048,
 * and the same integer arithmetic as its SIMD rows), with the tables computed once for all
 * T * C planes and no call per plane. A row is resized horizontally once (SSSE3: eight
 * outputs from one 16-byte load and a byte shuffle) and kept while the next output rows need it.
 *
 * i420_to_rgb(y, u, v, out, coefficients): same-sized Y, U and V planes (T frames of n pixels
 * each, the chroma already resampled to the luma's size) to R, G, B planes of out (T, 3, n):
 * each channel a*Y + b*U + c*V + d with the matrix's coefficients in 1/65536, rounded and
 * clipped, in one pass (the yuv420 store's reads).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <tmmintrin.h>
#define RESIZE_SSSE3 1
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* -- affine ------------------------------------------------------------------------------ */

#define SHIFT 14 /* the weights' fixed point: 1 << 14 is a weight of 1 */

/* For each output pixel: the top-left of a 2x2 source block inside the frame and the four
 * weights of that block (times m, zero for neighbours outside the frame), and the constant
 * (1 - m) * fill, in 1 / 2^14 (+ a half, so that the shift rounds). */
static void affine_table(const double *map, int height, int width, double fill, int *off,
                         short *w01, short *w23, int *cst)
{
    int x, y, i = 0;
    for (y = 0; y < height; y++) {
        for (x = 0; x < width; x++, i++) {
            double sx = map[0] * x + map[1] * y + map[2];
            double sy = map[3] * x + map[4] * y + map[5];
            double fx0 = (double)(long)sx, fy0 = (double)(long)sy; /* floor, without libm */
            fx0 -= fx0 > sx;
            fy0 -= fy0 > sy;
            double fx = sx - fx0, fy = sy - fy0;
            long x0 = (long)fx0, y0 = (long)fy0;
            if (x0 >= 0 && x0 <= width - 2 && y0 >= 0 && y0 <= height - 2) {
                /* inside the frame (most pixels): the block is the neighbourhood, m = 1 */
                off[i] = (int)(y0 * width + x0);
                w01[2 * i] = (short)((1.0 - fx) * (1.0 - fy) * (1 << SHIFT) + 0.5);
                w01[2 * i + 1] = (short)(fx * (1.0 - fy) * (1 << SHIFT) + 0.5);
                w23[2 * i] = (short)((1.0 - fx) * fy * (1 << SHIFT) + 0.5);
                w23[2 * i + 1] = (short)(fx * fy * (1 << SHIFT) + 0.5);
                cst[i] = 1 << (SHIFT - 1);
                continue;
            }
            long bx = x0 < 0 ? 0 : (x0 > width - 2 ? width - 2 : x0);
            long by = y0 < 0 ? 0 : (y0 > height - 2 ? height - 2 : y0);
            double w[4] = {(1.0 - fx) * (1.0 - fy), fx * (1.0 - fy), (1.0 - fx) * fy, fx * fy};
            double acc[4] = {0.0, 0.0, 0.0, 0.0};
            double m = 0.0;
            int n;
            for (n = 0; n < 4; n++) {
                long xn = x0 + (n & 1), yn = y0 + (n >> 1);
                if (xn < 0 || xn >= width || yn < 0 || yn >= height)
                    continue;
                acc[(yn - by) * 2 + (xn - bx)] += w[n];
                m += w[n];
            }
            off[i] = (int)(by * width + bx);
            for (n = 0; n < 2; n++) {
                w01[2 * i + n] = (short)(acc[n] * m * (1 << SHIFT) + 0.5);
                w23[2 * i + n] = (short)(acc[2 + n] * m * (1 << SHIFT) + 0.5);
            }
            cst[i] = (int)((1.0 - m) * fill * (1 << SHIFT) + 0.5) + (1 << (SHIFT - 1));
        }
    }
}

static inline unsigned char blend(const unsigned char *p, int width, const short *w01,
                                  const short *w23, int c)
{
    int v = (w01[0] * p[0] + w01[1] * p[1] + w23[0] * p[width] + w23[1] * p[width + 1] + c) >>
            SHIFT;
    return (unsigned char)(v < 0 ? 0 : (v > 255 ? 255 : v));
}

static inline unsigned short pair(const unsigned char *p)
{
    unsigned short v;
    memcpy(&v, p, 2);
    return v;
}

static void affine_rest(const unsigned char *s, unsigned char *d, int from, int n, int width,
                        const int *off, const short *w01, const short *w23, const int *cst)
{
    int j;
    for (j = from; j < n; j++)
        d[j] = blend(s + off[j], width, w01 + 2 * j, w23 + 2 * j, cst[j]);
}

/* All `planes` planes (each n pixels, one after another) of a window through the table: with
 * SSE2 eight pixels a step, their table entries loaded once for all the planes (each pixel's
 * two source pairs gathered as 16-bit words, pmaddwd against its weights); the rest one by
 * one. The planes advance together, row by row, so their rows stay in the cache. */
static void affine_window(const unsigned char *s, unsigned char *d, int planes, int n,
                          int width, const int *off, const short *w01, const short *w23,
                          const int *cst)
{
    int i = 0, p;
#ifdef __SSE2__
    const __m128i z = _mm_setzero_si128();
    for (; i + 8 <= n; i += 8) {
        const int o0 = off[i], o1 = off[i + 1], o2 = off[i + 2], o3 = off[i + 3];
        const int o4 = off[i + 4], o5 = off[i + 5], o6 = off[i + 6], o7 = off[i + 7];
        const __m128i *wa = (const __m128i *)(w01 + 2 * i), *wb = (const __m128i *)(w23 + 2 * i);
        const __m128i wa0 = _mm_loadu_si128(wa), wa1 = _mm_loadu_si128(wa + 1);
        const __m128i wb0 = _mm_loadu_si128(wb), wb1 = _mm_loadu_si128(wb + 1);
        const __m128i c0 = _mm_loadu_si128((const __m128i *)(cst + i));
        const __m128i c1 = _mm_loadu_si128((const __m128i *)(cst + i + 4));
        for (p = 0; p < planes; p++) {
            const unsigned char *t = s + (size_t)p * n, *b = t + width;
            __m128i top = _mm_set_epi16((short)pair(t + o7), (short)pair(t + o6),
                                        (short)pair(t + o5), (short)pair(t + o4),
                                        (short)pair(t + o3), (short)pair(t + o2),
                                        (short)pair(t + o1), (short)pair(t + o0));
            __m128i bot = _mm_set_epi16((short)pair(b + o7), (short)pair(b + o6),
                                        (short)pair(b + o5), (short)pair(b + o4),
                                        (short)pair(b + o3), (short)pair(b + o2),
                                        (short)pair(b + o1), (short)pair(b + o0));
            __m128i lo = _mm_add_epi32(_mm_madd_epi16(_mm_unpacklo_epi8(top, z), wa0),
                                       _mm_madd_epi16(_mm_unpacklo_epi8(bot, z), wb0));
            __m128i hi = _mm_add_epi32(_mm_madd_epi16(_mm_unpackhi_epi8(top, z), wa1),
                                       _mm_madd_epi16(_mm_unpackhi_epi8(bot, z), wb1));
            lo = _mm_srai_epi32(_mm_add_epi32(lo, c0), SHIFT);
            hi = _mm_srai_epi32(_mm_add_epi32(hi, c1), SHIFT);
            __m128i words = _mm_packs_epi32(lo, hi);
            _mm_storel_epi64((__m128i *)(d + (size_t)p * n + i), _mm_packus_epi16(words, words));
        }
    }
#endif
    for (p = 0; p < planes; p++)
        affine_rest(s + (size_t)p * n, d + (size_t)p * n, i, n, width, off, w01, w23, cst);
}

static PyObject *warp_affine(PyObject *self, PyObject *args)
{
    Py_buffer frames, maps;
    Py_ssize_t windows, planes, height, width;
    double fill;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "w*y*nnnnd", &frames, &maps, &windows, &planes, &height, &width,
                          &fill))
        return NULL;
    Py_ssize_t hw = height * width, frame = planes * hw;
    if (height < 2 || width < 2 || hw > 0x7fffffff || windows < 0 || planes < 0 ||
        frames.len < windows * frame || maps.len < windows * 6 * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "warp_affine: buffer sizes do not match the shape");
        goto done;
    }
    {
        /* the table (off, w01 and w23 as short pairs, cst), then one window's warped planes:
         * each window is warped there and copied back while it is in the cache, so the batch
         * is warped in place, with no second batch-sized buffer to fault in */
        int *tab = malloc(6 * hw * sizeof(int) + frame);
        if (tab == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        unsigned char *x = frames.buf, *scratch = (unsigned char *)(tab + 6 * hw);
        const double *mp = maps.buf;
        short *w01 = (short *)(tab + hw), *w23 = (short *)(tab + 3 * hw);
        fill = fill < 0.0 ? 0.0 : (fill > 255.0 ? 255.0 : fill);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < windows; k++) {
            affine_table(mp + 6 * k, (int)height, (int)width, fill, tab, w01, w23, tab + 5 * hw);
            affine_window(x + k * frame, scratch, (int)planes, (int)hw, (int)width, tab, w01,
                          w23, tab + 5 * hw);
            memcpy(x + k * frame, scratch, frame);
        }
        Py_END_ALLOW_THREADS
        free(tab);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&frames);
    PyBuffer_Release(&maps);
    return result;
}

/* -- hue --------------------------------------------------------------------------------- */

#define MAXF(a, b) ((a) > (b) ? (a) : (b))
#define MINF(a, b) ((a) < (b) ? (a) : (b))

#define CHUNK 512

/* One channel of HSV -> RGB with the hue h in units of the chroma c (the circle 6c long):
 * v - max(0, min(k, 4c - k, c)) with k = (h + n c) mod 6c, n = 5 for red, 3 for green, 1 for
 * blue (torchvision's sector table, v (1 - s f) and v (1 - s (1 - f)), in one expression) */
static inline float channel(float v, float c, float h, float nc, float c6)
{
    float k = h + nc;
    k -= c6 * (float)(k >= c6);
    float d = MINF(k, 4.0f * c - k);
    d = MINF(d, c);
    d = MAXF(d, 0.0f);
    return v - d;
}

/* The hue turn of `n` <= CHUNK pixels of float levels, in place: branch-free, no division,
 * so that the compiler vectorises it. */
VECTOR_CLONES
static void hue_chunk(float *restrict rf, float *restrict gf, float *restrict bf, int n,
                      float turn)
{
    int i;
    for (i = 0; i < n; i++) {
        float r = rf[i], g = gf[i], b = bf[i];
        float v = MAXF(r, MAXF(g, b)), p = MINF(r, MINF(g, b));
        float c = v - p, c6 = 6.0f * c;
        /* torchvision's hue (which channel is largest: red, then green, then blue) times c */
        float is_r = (float)(v == r), is_g = (float)(v == g) * (1.0f - is_r);
        float h = is_r * (g - b) + is_g * (2.0f * c + b - r) +
                  (1.0f - is_r - is_g) * (4.0f * c + r - g);
        h += turn * c; /* in (-4c, 9c): back on the circle */
        h += c6 * ((float)(h < 0.0f) - (float)(h >= c6));
        h += c6 * (float)(h < 0.0f);
        rf[i] = channel(v, c, h, 5.0f * c, c6);
        gf[i] = channel(v, c, h, 3.0f * c, c6);
        bf[i] = channel(v, c, h, c, c6);
    }
}

VECTOR_CLONES
static void to_float(const unsigned char *restrict x, float *restrict f, int n)
{
    int i;
    for (i = 0; i < n; i++)
        f[i] = x[i];
}

/* back to uint8 as torchvision converts: x / 255 * 255.999, truncated */
VECTOR_CLONES
static void to_bytes(const float *restrict f, unsigned char *restrict x, int n)
{
    const float to_byte = (256.0f - 1e-3f) / 255.0f;
    int i;
    for (i = 0; i < n; i++)
        x[i] = (unsigned char)(int)(f[i] * to_byte);
}

static void hue_frame(unsigned char *rp, unsigned char *gp, unsigned char *bp, int n,
                      float shift)
{
    float buf[3 * CHUNK];
    int lo;
    for (lo = 0; lo < n; lo += CHUNK) {
        int k = n - lo < CHUNK ? n - lo : CHUNK;
        to_float(rp + lo, buf, k);
        to_float(gp + lo, buf + CHUNK, k);
        to_float(bp + lo, buf + 2 * CHUNK, k);
        hue_chunk(buf, buf + CHUNK, buf + 2 * CHUNK, k, 6.0f * shift);
        to_bytes(buf, rp + lo, k);
        to_bytes(buf + CHUNK, gp + lo, k);
        to_bytes(buf + 2 * CHUNK, bp + lo, k);
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HUE_AVX2 1
/* hue_frame with AVX2 and FMA, eight pixels a step straight from and to the bytes: the same
 * expressions as hue_chunk, the choices as blends. The pixels after the last step of eight
 * are left to the caller; returns how many were done. */
__attribute__((target("avx2,fma"))) static int hue_frame_avx2(unsigned char *rp,
                                                              unsigned char *gp,
                                                              unsigned char *bp, int n,
                                                              float shift)
{
    const __m256 zero = _mm256_setzero_ps(), turn = _mm256_set1_ps(6.0f * shift);
    const __m256 two = _mm256_set1_ps(2.0f), three = _mm256_set1_ps(3.0f);
    const __m256 four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f);
    const __m256 six = _mm256_set1_ps(6.0f);
    const __m256 to_byte = _mm256_set1_ps((256.0f - 1e-3f) / 255.0f);
    unsigned char *planes[3] = {rp, gp, bp};
    int i;
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 x[3];
        for (int j = 0; j < 3; j++) {
            __m128i bytes = _mm_loadl_epi64((const __m128i *)(planes[j] + i));
            x[j] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
        }
        __m256 r = x[0], g = x[1], b = x[2];
        __m256 v = _mm256_max_ps(r, _mm256_max_ps(g, b));
        __m256 p = _mm256_min_ps(r, _mm256_min_ps(g, b));
        __m256 c = _mm256_sub_ps(v, p), c6 = _mm256_mul_ps(six, c);
        __m256 h = _mm256_fmadd_ps(four, c, _mm256_sub_ps(r, g));
        h = _mm256_blendv_ps(h, _mm256_fmadd_ps(two, c, _mm256_sub_ps(b, r)),
                             _mm256_cmp_ps(v, g, _CMP_EQ_OQ));
        h = _mm256_blendv_ps(h, _mm256_sub_ps(g, b), _mm256_cmp_ps(v, r, _CMP_EQ_OQ));
        h = _mm256_fmadd_ps(turn, c, h);
        h = _mm256_blendv_ps(h, _mm256_add_ps(h, c6), _mm256_cmp_ps(h, zero, _CMP_LT_OQ));
        h = _mm256_blendv_ps(h, _mm256_sub_ps(h, c6), _mm256_cmp_ps(h, c6, _CMP_GE_OQ));
        h = _mm256_blendv_ps(h, _mm256_add_ps(h, c6), _mm256_cmp_ps(h, zero, _CMP_LT_OQ));
        __m256 c4 = _mm256_mul_ps(four, c);
        __m256 offsets[3] = {_mm256_mul_ps(five, c), _mm256_mul_ps(three, c), c};
        __m128i out[3];
        for (int j = 0; j < 3; j++) {
            __m256 k = _mm256_add_ps(h, offsets[j]);
            k = _mm256_blendv_ps(k, _mm256_sub_ps(k, c6), _mm256_cmp_ps(k, c6, _CMP_GE_OQ));
            __m256 d = _mm256_min_ps(k, _mm256_sub_ps(c4, k));
            d = _mm256_max_ps(_mm256_min_ps(d, c), zero);
            __m256i q = _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_sub_ps(v, d), to_byte));
            __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            out[j] = _mm_packus_epi16(w, w);
        }
        for (int j = 0; j < 3; j++)
            _mm_storel_epi64((__m128i *)(planes[j] + i), out[j]);
    }
    return i;
}
#endif

static PyObject *hue_shift(PyObject *self, PyObject *args)
{
    Py_buffer frames, shifts;
    Py_ssize_t count, pixels;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "w*y*nn", &frames, &shifts, &count, &pixels))
        return NULL;
    if (count < 0 || pixels < 0 || pixels > 0x7fffffff || frames.len < count * 3 * pixels ||
        shifts.len < count * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "hue_shift: buffer sizes do not match the shape");
        goto done;
    }
    {
        unsigned char *x = frames.buf;
        const double *sh = shifts.buf;
#ifdef HUE_AVX2
        int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < count; k++) {
            if (sh[k] == 0.0)
                continue;
            unsigned char *f = x + k * 3 * pixels;
            int done = 0;
#ifdef HUE_AVX2
            if (avx2)
                done = hue_frame_avx2(f, f + pixels, f + 2 * pixels, (int)pixels, (float)sh[k]);
#endif
            hue_frame(f + done, f + pixels + done, f + 2 * pixels + done, (int)pixels - done,
                      (float)sh[k]);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&frames);
    PyBuffer_Release(&shifts);
    return result;
}


/* -- bilinear resize --------------------------------------------------------------------- */

#define COEF 2048 /* OpenCV's INTER_RESIZE_COEF_SCALE */

/* The source index and the two weights of output position d (of `out`, from `in`), as
 * OpenCV's resize computes them for INTER_LINEAR; `clamp` folds the ends into one pixel. */
static void linear_tap(int d, int in, double scale, int *s, short *w0, short *w1)
{
    float f = (float)((d + 0.5) * scale - 0.5);
    int i = (int)floorf(f);
    f -= (float)i;
    if (i < 0)
        f = 0.0f, i = 0;
    if (i >= in - 1)
        f = 0.0f, i = in - 1;
    *s = i;
    *w0 = (short)lrintf((1.0f - f) * COEF);
    *w1 = (short)lrintf(f * COEF);
}

/* One output row's horizontal pass, in OpenCV's units (sum of taps times weights, >> 4):
 * x0[j] the left tap of output j, x1[j] the right (x0 at the edge), wx[2j..2j+1] weights. */
static void hrow_scalar(const unsigned char *s, short *h, int ow, const int *x0, const int *x1,
                        const short *wx)
{
    for (int j = 0; j < ow; j++)
        h[j] = (short)((s[x0[j]] * wx[2 * j] + s[x1[j]] * wx[2 * j + 1]) >> 4);
}

#ifdef RESIZE_SSSE3
/* Eight outputs a step: `start[g]` where group g's 16 bytes are loaded, `mask` (16 bytes a
 * group) the shuffle that lays out (left, right) tap pairs, the weights as pairs to match. */
__attribute__((target("ssse3"))) static void hrow_ssse3(const unsigned char *s, short *h,
                                                        int groups, const int *start,
                                                        const unsigned char *mask,
                                                        const short *wx)
{
    const __m128i z = _mm_setzero_si128();
    for (int g = 0; g < groups; g++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + start[g]));
        v = _mm_shuffle_epi8(v, _mm_loadu_si128((const __m128i *)(mask + 16 * g)));
        __m128i lo = _mm_madd_epi16(_mm_unpacklo_epi8(v, z),
                                    _mm_loadu_si128((const __m128i *)(wx + 16 * g)));
        __m128i hi = _mm_madd_epi16(_mm_unpackhi_epi8(v, z),
                                    _mm_loadu_si128((const __m128i *)(wx + 16 * g + 8)));
        _mm_storeu_si128((__m128i *)(h + 8 * g),
                         _mm_packs_epi32(_mm_srai_epi32(lo, 4), _mm_srai_epi32(hi, 4)));
    }
}
#endif

#ifdef RESIZE_SSSE3
/* hrow_ssse3 two groups a step with AVX2 (a group per 128-bit lane, each its own load);
 * returns the groups done. */
__attribute__((target("avx2"))) static int hrow_avx2(const unsigned char *s, short *h,
                                                     int groups, const int *start,
                                                     const unsigned char *mask,
                                                     const short *wx)
{
    const __m256i z = _mm256_setzero_si256();
    int g = 0;
    for (; g + 2 <= groups; g += 2) {
        __m256i v = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(s + start[g]))),
            _mm_loadu_si128((const __m128i *)(s + start[g + 1])), 1);
        v = _mm256_shuffle_epi8(v, _mm256_loadu_si256((const __m256i *)(mask + 16 * g)));
        /* per lane: the low four pairs, the high four; weights laid out to match */
        const __m128i *w = (const __m128i *)(wx + 16 * g);
        __m256i wlo = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128(w)), _mm_loadu_si128(w + 2), 1);
        __m256i whi = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128(w + 1)), _mm_loadu_si128(w + 3), 1);
        __m256i lo = _mm256_madd_epi16(_mm256_unpacklo_epi8(v, z), wlo);
        __m256i hi = _mm256_madd_epi16(_mm256_unpackhi_epi8(v, z), whi);
        _mm256_storeu_si256((__m256i *)(h + 8 * g), _mm256_packs_epi32(_mm256_srai_epi32(lo, 4),
                                                                        _mm256_srai_epi32(hi, 4)));
    }
    return g;
}
#endif

/* out = ((h0 * b0) >> 16) + ((h1 * b1) >> 16), then (+ 2) >> 2: OpenCV's vertical step on
 * uint8 (VResizeLinearVec_32s8u); sixteen at a time with SSE2, the rest one by one. */
static void vrow_rest(const short *h0, const short *h1, unsigned char *d, int j, int n,
                      short b0, short b1)
{
    for (; j < n; j++) {
        int v = (((h0[j] * b0) >> 16) + ((h1[j] * b1) >> 16) + 2) >> 2;
        d[j] = (unsigned char)(v < 0 ? 0 : (v > 255 ? 255 : v));
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
#define VROW_AVX2 1
/* vrow thirty-two at a time with AVX2; returns how many were done */
__attribute__((target("avx2"))) static int vrow_avx2(const short *h0, const short *h1,
                                                     unsigned char *d, int n, short b0,
                                                     short b1)
{
    const __m256i c0 = _mm256_set1_epi16(b0), c1 = _mm256_set1_epi16(b1);
    const __m256i two = _mm256_set1_epi16(2);
    int j = 0;
    for (; j + 32 <= n; j += 32) {
        __m256i a = _mm256_adds_epi16(
            _mm256_mulhi_epi16(_mm256_loadu_si256((const __m256i *)(h0 + j)), c0),
            _mm256_mulhi_epi16(_mm256_loadu_si256((const __m256i *)(h1 + j)), c1));
        __m256i b = _mm256_adds_epi16(
            _mm256_mulhi_epi16(_mm256_loadu_si256((const __m256i *)(h0 + j + 16)), c0),
            _mm256_mulhi_epi16(_mm256_loadu_si256((const __m256i *)(h1 + j + 16)), c1));
        a = _mm256_srai_epi16(_mm256_adds_epi16(a, two), 2);
        b = _mm256_srai_epi16(_mm256_adds_epi16(b, two), 2);
        __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xD8);
        _mm256_storeu_si256((__m256i *)(d + j), packed);
    }
    return j;
}
#endif

static void vrow(const short *h0, const short *h1, unsigned char *d, int n, short b0, short b1,
                 int avx2)
{
    int j = 0;
#ifdef VROW_AVX2
    if (avx2)
        j = vrow_avx2(h0, h1, d, n, b0, b1);
#else
    (void)avx2;
#endif
#ifdef __SSE2__
    const __m128i c0 = _mm_set1_epi16(b0), c1 = _mm_set1_epi16(b1), two = _mm_set1_epi16(2);
    for (; j + 16 <= n; j += 16) {
        __m128i a = _mm_adds_epi16(
            _mm_mulhi_epi16(_mm_loadu_si128((const __m128i *)(h0 + j)), c0),
            _mm_mulhi_epi16(_mm_loadu_si128((const __m128i *)(h1 + j)), c1));
        __m128i b = _mm_adds_epi16(
            _mm_mulhi_epi16(_mm_loadu_si128((const __m128i *)(h0 + j + 8)), c0),
            _mm_mulhi_epi16(_mm_loadu_si128((const __m128i *)(h1 + j + 8)), c1));
        a = _mm_srai_epi16(_mm_adds_epi16(a, two), 2);
        b = _mm_srai_epi16(_mm_adds_epi16(b, two), 2);
        _mm_storeu_si128((__m128i *)(d + j), _mm_packus_epi16(a, b));
    }
#endif
    vrow_rest(h0, h1, d, j, n, b0, b1);
}

/* The cache lines of `n` bytes at `p`, asked for ahead of their use. */
static inline void prefetch_row(const unsigned char *p, int n)
{
#if defined(__GNUC__)
    for (int i = 0; i < n; i += 64)
        __builtin_prefetch(p + i);
    __builtin_prefetch(p + n - 1);
#else
    (void)p, (void)n;
#endif
}

static PyObject *resize_linear(PyObject *self, PyObject *args)
{
    PyObject *src_obj, *dst_obj;
    Py_buffer src, dst;
    int flip;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOp", &src_obj, &dst_obj, &flip))
        return NULL;
    if (PyObject_GetBuffer(src_obj, &src, PyBUF_STRIDED_RO) < 0)
        return NULL;
    if (PyObject_GetBuffer(dst_obj, &dst, PyBUF_STRIDED) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    if (src.ndim != 4 || src.itemsize != 1 || src.strides[3] != 1 || dst.ndim != 4 ||
        dst.itemsize != 1 || !PyBuffer_IsContiguous(&dst, 'C') ||
        src.shape[0] != dst.shape[0] || src.shape[1] != dst.shape[1] || src.shape[2] < 1 ||
        src.shape[3] < 1 || dst.shape[2] < 1 || dst.shape[3] < 1 ||
        src.shape[3] > 0x7fffffff || dst.shape[3] > 0x7fffffff) {
        PyErr_SetString(PyExc_ValueError,
                        "resize_linear: need uint8 src (T, C, bh, bw) with adjacent pixels and "
                        "a C-order uint8 dst (T, C, oh, ow)");
        goto done;
    }
    {
        const int bh = (int)src.shape[2], bw = (int)src.shape[3];
        const int oh = (int)dst.shape[2], ow = (int)dst.shape[3];
        const Py_ssize_t planes1 = src.shape[1], planes = src.shape[0] * src.shape[1];
        const int groups = (ow + 7) / 8, wide = 8 * groups;
        /* tables: x0, x1 (ints), start (ints), wx (2 shorts an output), mask (16 bytes a group),
         * yofs (2 ints a row), wy (2 shorts a row), two horizontal rows */
        size_t bytes = (size_t)ow * 2 * sizeof(int) + (size_t)groups * sizeof(int) +
                       (size_t)wide * 2 * sizeof(short) + (size_t)groups * 16 +
                       (size_t)oh * 2 * sizeof(int) + (size_t)oh * 2 * sizeof(short) +
                       (size_t)wide * 2 * sizeof(short) + 64;
        char *mem = calloc(1, bytes);
        if (mem == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        int *x0 = (int *)mem, *x1 = x0 + ow, *start = x1 + ow;
        short *wx = (short *)(start + groups);
        unsigned char *mask = (unsigned char *)(wx + 2 * wide);
        int *ys = (int *)(mask + 16 * groups);
        short *wy = (short *)(ys + 2 * oh);
        short *rows = wy + 2 * oh;
        double scale_x = 1.0 / ((double)ow / bw), scale_y = 1.0 / ((double)oh / bh);
        int j, fast = 0;
        for (j = 0; j < ow; j++) {
            int s, at = flip ? ow - 1 - j : j;
            linear_tap(at, bw, scale_x, &s, &wx[2 * j], &wx[2 * j + 1]);
            x0[j] = s;
            x1[j] = s + 1 < bw ? s + 1 : s;
        }
        for (j = 0; j < oh; j++) {
            /* OpenCV keeps a row's weights past either end and reads the end row twice */
            float f = (float)((j + 0.5) * scale_y - 0.5);
            int i = (int)floorf(f);
            f -= (float)i;
            wy[2 * j] = (short)lrintf((1.0f - f) * COEF);
            wy[2 * j + 1] = (short)lrintf(f * COEF);
            ys[2 * j] = i < 0 ? 0 : (i > bh - 1 ? bh - 1 : i);
            ys[2 * j + 1] = i + 1 < 0 ? 0 : (i + 1 > bh - 1 ? bh - 1 : i + 1);
        }
#ifdef RESIZE_SSSE3
        if (bw >= 16 && __builtin_cpu_supports("ssse3")) {
            fast = 1;
            for (int g = 0; g < groups && fast; g++) {
                int lo = 0x7fffffff, hi = -1;
                for (j = 8 * g; j < 8 * g + 8; j++) {
                    int k = j < ow ? j : ow - 1; /* the padding repeats the last output */
                    lo = x0[k] < lo ? x0[k] : lo;
                    lo = x1[k] < lo ? x1[k] : lo;
                    hi = x0[k] > hi ? x0[k] : hi;
                    hi = x1[k] > hi ? x1[k] : hi;
                }
                int at = lo < bw - 16 ? lo : bw - 16;
                if (hi - at > 15) {
                    fast = 0;
                    break;
                }
                start[g] = at;
                for (j = 8 * g; j < 8 * g + 8; j++) {
                    int k = j < ow ? j : ow - 1;
                    mask[2 * j] = (unsigned char)(x0[k] - at);
                    mask[2 * j + 1] = (unsigned char)(x1[k] - at);
                    if (j >= ow)
                        wx[2 * j] = wx[2 * k], wx[2 * j + 1] = wx[2 * k + 1];
                }
            }
        }
#endif
#if defined(__GNUC__) && defined(__x86_64__)
        const int avx2 = __builtin_cpu_supports("avx2");
#else
        const int avx2 = 0;
#endif
        const char *base = src.buf;
        unsigned char *out = dst.buf;
        const Py_ssize_t s0 = src.strides[0], s1 = src.strides[1], s2 = src.strides[2];
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t p = 0; p < planes; p++) {
            const unsigned char *plane =
                (const unsigned char *)(base + (p / planes1) * s0 + (p % planes1) * s1);
            unsigned char *d = out + (size_t)p * oh * ow;
            short *slot[2] = {rows, rows + wide};
            int tag[2] = {-1, -1};
            for (int y = 0; y < oh; y++) {
                short *h[2];
                for (int k = 0; k < 2; k++) {
                    int r = ys[2 * y + k], at = tag[0] == r ? 0 : (tag[1] == r ? 1 : -1);
                    if (at < 0) { /* into the slot that does not hold the other row needed */
                        if (k == 0)
                            at = tag[0] == ys[2 * y + 1] ? 1 : 0;
                        else
                            at = h[0] == slot[0] ? 1 : 0;
                        const unsigned char *sr = plane + r * s2;
                        prefetch_row(sr + 2 * s2, bw); /* rows come from memory: ask ahead */
#ifdef RESIZE_SSSE3
                        if (fast) {
                            int done = avx2 ? hrow_avx2(sr, slot[at], groups, start, mask, wx)
                                            : 0;
                            hrow_ssse3(sr, slot[at] + 8 * done, groups - done, start + done,
                                       mask + 16 * done, wx + 16 * done);
                        } else
#endif
                            hrow_scalar(sr, slot[at], ow, x0, x1, wx);
                        tag[at] = r;
                    }
                    h[k] = slot[at];
                }
                vrow(h[0], h[1], d + (size_t)y * ow, ow, wy[2 * y], wy[2 * y + 1], avx2);
            }
        }
        Py_END_ALLOW_THREADS
        free(mem);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return result;
}

/* -- I420 planes to RGB ------------------------------------------------------------------ */

#define YUV_SHIFT 12 /* coefficients in 1/4096: each fits an int16 for pmaddwd */

/* n pixels of same-sized Y, U, V planes to R, G, B planes: each channel
 * (a*Y + b*U + c*V + d) in 1/4096, rounded, clipped to 0..255. k: Y, R's V, B's U, G's U,
 * G's V (int16 range), then the offsets of R, B, G with the rounding folded in. */
static void i420_rows(const unsigned char *y, const unsigned char *u, const unsigned char *v,
                      unsigned char *rp, unsigned char *gp, unsigned char *bp, Py_ssize_t n,
                      const int *k)
{
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    const __m128i kr = _mm_set1_epi32((int)(((unsigned)k[1] << 16) | ((unsigned)k[0] & 0xffff))); /* (Y, V) . (ys, rv) */
    const __m128i kb = _mm_set1_epi32((int)(((unsigned)k[2] << 16) | ((unsigned)k[0] & 0xffff))); /* (Y, U) . (ys, bu) */
    const __m128i kg = _mm_set1_epi32((int)(((unsigned)k[3] << 16) | ((unsigned)k[0] & 0xffff))); /* (Y, U) . (ys, gu) */
    const __m128i kgv = _mm_set1_epi32((int)((unsigned)k[4] & 0xffff));                 /* (V, 0) . (gv, 0) */
    const __m128i orr = _mm_set1_epi32(k[5]), ob = _mm_set1_epi32(k[6]), og = _mm_set1_epi32(k[7]);
    for (; i + 8 <= n; i += 8) {
        __m128i yy = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(y + i)), zero);
        __m128i uu = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(u + i)), zero);
        __m128i vv = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(v + i)), zero);
        __m128i yv0 = _mm_unpacklo_epi16(yy, vv), yv1 = _mm_unpackhi_epi16(yy, vv);
        __m128i yu0 = _mm_unpacklo_epi16(yy, uu), yu1 = _mm_unpackhi_epi16(yy, uu);
        __m128i v0 = _mm_unpacklo_epi16(vv, zero), v1 = _mm_unpackhi_epi16(vv, zero);
        __m128i r0 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(yv0, kr), orr), YUV_SHIFT);
        __m128i r1 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(yv1, kr), orr), YUV_SHIFT);
        __m128i b0 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(yu0, kb), ob), YUV_SHIFT);
        __m128i b1 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(yu1, kb), ob), YUV_SHIFT);
        __m128i g0 = _mm_add_epi32(_mm_madd_epi16(yu0, kg), _mm_madd_epi16(v0, kgv));
        __m128i g1 = _mm_add_epi32(_mm_madd_epi16(yu1, kg), _mm_madd_epi16(v1, kgv));
        g0 = _mm_srai_epi32(_mm_add_epi32(g0, og), YUV_SHIFT);
        g1 = _mm_srai_epi32(_mm_add_epi32(g1, og), YUV_SHIFT);
        __m128i r = _mm_packs_epi32(r0, r1), g = _mm_packs_epi32(g0, g1), b = _mm_packs_epi32(b0, b1);
        _mm_storel_epi64((__m128i *)(rp + i), _mm_packus_epi16(r, r));
        _mm_storel_epi64((__m128i *)(gp + i), _mm_packus_epi16(g, g));
        _mm_storel_epi64((__m128i *)(bp + i), _mm_packus_epi16(b, b));
    }
#endif
    for (; i < n; i++) {
        int yy = k[0] * y[i], uu = u[i], vv = v[i];
        int r = (yy + k[1] * vv + k[5]) >> YUV_SHIFT;
        int b = (yy + k[2] * uu + k[6]) >> YUV_SHIFT;
        int g = (yy + k[3] * uu + k[4] * vv + k[7]) >> YUV_SHIFT;
        rp[i] = (unsigned char)(r < 0 ? 0 : r > 255 ? 255 : r);
        gp[i] = (unsigned char)(g < 0 ? 0 : g > 255 ? 255 : g);
        bp[i] = (unsigned char)(b < 0 ? 0 : b > 255 ? 255 : b);
    }
}

static PyObject *i420_to_rgb(PyObject *self, PyObject *args)
{
    Py_buffer yb, ub, vb, ob;
    double c[8];
    PyObject *result = NULL;
    Py_ssize_t t, n;
    if (!PyArg_ParseTuple(args, "y*y*y*w*nn(dddddddd)", &yb, &ub, &vb, &ob, &t, &n, &c[0], &c[1],
                          &c[2], &c[3], &c[4], &c[5], &c[6], &c[7]))
        return NULL;
    /* y, u, v: T x n pixels each, C-order (a simple buffer is contiguous); out: (T, 3, n) */
    if (t < 0 || n < 0 || n > PY_SSIZE_T_MAX / 3 / (t ? t : 1) || yb.len != t * n ||
        ub.len != t * n || vb.len != t * n || ob.len != 3 * t * n) {
        PyErr_SetString(PyExc_ValueError,
                        "i420_to_rgb: need uint8 Y, U, V of T x n pixels each and an out of "
                        "T x 3 x n");
        goto done;
    }
    {
        /* (ys, rv, bu, gu, gv, cr, cb, cg) -> k in 1/4096, the offsets with the rounding */
        int k[8];
        const double one = (double)(1 << YUV_SHIFT);
        for (int j = 0; j < 8; j++)
            k[j] = (int)lrint(c[j] * one) + (j >= 5 ? 1 << (YUV_SHIFT - 1) : 0);
        for (int j = 0; j < 5; j++)
            if (k[j] < -32768 || k[j] > 32767) {
                PyErr_SetString(PyExc_ValueError, "i420_to_rgb: a coefficient beyond +-8");
                goto done;
            }
        const unsigned char *y = yb.buf, *u = ub.buf, *v = vb.buf;
        unsigned char *o = ob.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t f = 0; f < t; f++)
            i420_rows(y + f * n, u + f * n, v + f * n, o + f * 3 * n, o + f * 3 * n + n,
                      o + f * 3 * n + 2 * n, n, k);
        Py_END_ALLOW_THREADS
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&yb);
    PyBuffer_Release(&ub);
    PyBuffer_Release(&vb);
    PyBuffer_Release(&ob);
    return result;
}

static PyMethodDef methods[] = {
    {"warp_affine", warp_affine, METH_VARARGS, "Bilinear affine warp of uint8 windows, in place."},
    {"hue_shift", hue_shift, METH_VARARGS, "Hue shift of uint8 RGB frames, in place."},
    {"resize_linear", resize_linear, METH_VARARGS, "Bilinear resize of uint8 planes."},
    {"i420_to_rgb", i420_to_rgb, METH_VARARGS, "Same-sized Y, U, V planes to RGB planes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pixels",
    "uint8 kernels: affine warp, hue shift, bilinear resize, I420 to RGB.", -1, methods,
};

PyMODINIT_FUNC PyInit__pixels(void)
{
    return PyModule_Create(&module);
}
