/* Partial JPEG decoding for the jpeg store's box reads (hyperframes.store._jpeg_crop).
 *
 * decode_window(datas, out, top, left, height, width, denom) decodes each JPEG of `datas`
 * (a window's frames, one box for all of them) only over the rows and the iMCU columns that
 * cover the box, at the DCT scale 1/denom (1, 2, 4 or 8), into out[k] ((T, R, S, 3) uint8,
 * C-contiguous, RGB): libjpeg-turbo's jpeg_crop_scanline for the columns, jpeg_skip_scanlines
 * for the rows above the box, and nothing read below it. Returns (image_height, image_width,
 * row0, col0, rows, cols): the decoded region out[k, :rows, :cols] is rows row0.. and columns
 * col0.. of the frame scaled by 1/denom (col0 is the box's left edge moved down to an iMCU
 * boundary). A corrupt or truncated JPEG (an error or a warning of libjpeg) raises ValueError;
 * the GIL is released while decoding.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>

typedef struct {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    int warned;
    char message[JMSG_LENGTH_MAX];
} error_state;

static void on_error(j_common_ptr cinfo)
{
    error_state *err = (error_state *)cinfo->err;
    cinfo->err->format_message(cinfo, err->message);
    longjmp(err->jump, 1);
}

static void on_message(j_common_ptr cinfo, int level)
{
    error_state *err = (error_state *)cinfo->err;
    if (level < 0 && !err->warned) { /* a warning: corrupt data that libjpeg would paper over */
        err->warned = 1;
        cinfo->err->format_message(cinfo, err->message);
    }
}

#define MARGIN 2

typedef struct {
    int height, width, row0, col0, rows, cols;
} region;

/* Decode one frame into `dst` (max_rows rows of max_cols RGB pixels). Returns 0, or -1 with
 * err->message set. */
static int decode_one(struct jpeg_decompress_struct *cinfo, error_state *err,
                      const unsigned char *data, size_t size, unsigned char *dst,
                      int max_rows, int max_cols, int top, int left, int height, int width,
                      int denom, region *got)
{
    JSAMPROW rows[16];
    JDIMENSION x0, cw;
    int r0, r1, c1, k, n;

    if (setjmp(err->jump)) {
        jpeg_abort_decompress(cinfo);
        return -1;
    }
    jpeg_mem_src(cinfo, data, (unsigned long)size);
    jpeg_read_header(cinfo, TRUE);
    cinfo->scale_num = 1;
    cinfo->scale_denom = (unsigned int)denom;
    cinfo->out_color_space = JCS_RGB;
    jpeg_start_decompress(cinfo);
    got->height = (int)cinfo->image_height;
    got->width = (int)cinfo->image_width;
    if (top + height > got->height || left + width > got->width) {
        snprintf(err->message, sizeof err->message,
                 "the box (top %d, left %d, %dx%d) is not inside the %dx%d image", top, left,
                 height, width, got->height, got->width);
        jpeg_abort_decompress(cinfo);
        return -1;
    }
    r0 = top / denom;
    r1 = (top + height + denom - 1) / denom;
    if (r1 > (int)cinfo->output_height) r1 = (int)cinfo->output_height;
    /* two more columns each side where the image has them: the fancy upsampling of a column
     * at the cropped region's edge takes the edge's chroma for its neighbour's */
    x0 = (JDIMENSION)(left / denom > MARGIN ? left / denom - MARGIN : 0);
    c1 = (left + width + denom - 1) / denom + MARGIN;
    if (c1 > (int)cinfo->output_width) c1 = (int)cinfo->output_width;
    cw = (JDIMENSION)c1 - x0;
    if (cw < cinfo->output_width) jpeg_crop_scanline(cinfo, &x0, &cw);
    else x0 = 0;
    if (r1 - r0 > max_rows || (int)cw > max_cols) {
        snprintf(err->message, sizeof err->message,
                 "the region %dx%d does not fit the %dx%d buffer", r1 - r0, (int)cw, max_rows,
                 max_cols);
        jpeg_abort_decompress(cinfo);
        return -1;
    }
    if (r0 > 0) jpeg_skip_scanlines(cinfo, (JDIMENSION)r0);
    while ((int)cinfo->output_scanline < r1) {
        n = r1 - (int)cinfo->output_scanline;
        if (n > 16) n = 16;
        for (k = 0; k < n; k++)
            rows[k] = dst + (size_t)((int)cinfo->output_scanline - r0 + k) * max_cols * 3;
        jpeg_read_scanlines(cinfo, rows, (JDIMENSION)n);
    }
    jpeg_abort_decompress(cinfo); /* the rows below the box are never decoded */
    got->row0 = r0;
    got->col0 = (int)x0;
    got->rows = r1 - r0;
    got->cols = (int)cw;
    return 0;
}

static PyObject *decode_window(PyObject *self, PyObject *args)
{
    PyObject *datas, *seq, *target;
    Py_buffer out, *bufs;
    int top, left, height, width, denom, failed = -1, bad = 0;
    Py_ssize_t t, k, acquired = 0;
    region first = {0}, got = {0};
    struct jpeg_decompress_struct cinfo;
    error_state err;
    PyObject *result = NULL;

    if (!PyArg_ParseTuple(args, "OOiiiii", &datas, &target, &top, &left, &height, &width,
                          &denom))
        return NULL;
    if (denom != 1 && denom != 2 && denom != 4 && denom != 8)
        return PyErr_Format(PyExc_ValueError, "denom must be 1, 2, 4 or 8, got %d", denom);
    if (top < 0 || left < 0 || height < 1 || width < 1)
        return PyErr_Format(PyExc_ValueError, "bad box (top %d, left %d, %dx%d)", top, left,
                            height, width);
    seq = PySequence_Fast(datas, "datas must be a sequence of JPEG buffers");
    if (seq == NULL) return NULL;
    t = PySequence_Fast_GET_SIZE(seq);
    if (PyObject_GetBuffer(target, &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    if (out.ndim != 4 || out.shape[0] < t || out.shape[3] != 3 || out.itemsize != 1) {
        PyErr_SetString(PyExc_ValueError, "out must be a C-contiguous (T, R, S, 3) uint8 array");
        goto done;
    }
    bufs = PyMem_Calloc((size_t)(t ? t : 1), sizeof(Py_buffer));
    if (bufs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; acquired < t; acquired++)
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, acquired), &bufs[acquired],
                               PyBUF_C_CONTIGUOUS) < 0)
            goto release;

    Py_BEGIN_ALLOW_THREADS
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = on_error;
    err.mgr.emit_message = on_message;
    err.warned = 0;
    err.message[0] = '\0';
    jpeg_create_decompress(&cinfo);
    for (k = 0; k < t; k++) {
        unsigned char *dst = (unsigned char *)out.buf + k * out.strides[0];
        if (decode_one(&cinfo, &err, bufs[k].buf, (size_t)bufs[k].len, dst, (int)out.shape[1],
                       (int)out.shape[2], top, left, height, width, denom, &got) < 0 ||
            err.warned) {
            failed = (int)k;
            break;
        }
        if (k == 0) first = got;
        else if (memcmp(&first, &got, sizeof got) != 0) {
            failed = (int)k;
            bad = 1;
            break;
        }
    }
    jpeg_destroy_decompress(&cinfo);
    Py_END_ALLOW_THREADS

    if (failed >= 0 && bad)
        PyErr_Format(PyExc_ValueError,
                     "JPEG %d of the window is %dx%d (region at %d,%d), the first %dx%d (at %d,%d)",
                     failed, got.height, got.width, got.row0, got.col0, first.height,
                     first.width, first.row0, first.col0);
    else if (failed >= 0)
        PyErr_Format(PyExc_ValueError, "JPEG %d of the window cannot be decoded: %s", failed,
                     err.message);
    else
        result = Py_BuildValue("iiiiii", first.height, first.width, first.row0, first.col0,
                               first.rows, first.cols);
release:
    for (k = 0; k < acquired; k++) PyBuffer_Release(&bufs[k]);
    PyMem_Free(bufs);
done:
    PyBuffer_Release(&out);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_window", decode_window, METH_VARARGS,
     "decode_window(datas, out, top, left, height, width, denom) -> (image_height, "
     "image_width, row0, col0, rows, cols): each JPEG decoded over the box only, at scale "
     "1/denom, into out[k] ((T, R, S, 3) uint8, RGB)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jpegcrop",
    "Partial JPEG decoding (libjpeg-turbo: cropped columns, skipped rows, DCT scaling).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__jpegcrop(void)
{
    return PyModule_Create(&module);
}
