/* itemwise(decode, scan, raws, plain, failing, repeats, max_depth, errors) -> list | None: the per-finding loop of
 * the itemwise reader (part of the _place extension). itemwise._python_items is the reference: the same calls in
 * the same order, so the same findings, the same `repeats` and the same exceptions.
 *
 * For each raw finding in the list `raws`, in order: clean is True when `scan` is None (the whole text scanned
 * clean), else scan(raw). A clean finding is decoded with decode(raw) and the result appended to a new list; when
 * the decoder raises one of `errors` (a tuple: typed.DECODE_ERRORS) that exception is dropped and the finding
 * fails, as does a finding that is not clean. A failing finding's value is plain(raw); then
 * failing(items, raw, value, clean, index, repeats, max_depth) appends it (noting a repeated key in `repeats`) and
 * answers whether the reader goes on: when it says no, the call returns None. For a clean finding with too few
 * brackets to nest beyond max_depth, failing would only append the value: that is done here without calling it.
 * Any other exception, of scan, decode, plain or failing, propagates.
 */
#include "_place.h"

/* Opening brackets in the bytes of `raw` (a msgspec.Raw, or anything with a buffer); -1 with an error set. */
static Py_ssize_t
brackets(PyObject *raw)
{
    Py_buffer view;
    if (PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) < 0)
        return -1;
    const char *at = view.buf;
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < view.len; i++)
        count += (at[i] == '{') | (at[i] == '[');
    PyBuffer_Release(&view);
    return count;
}

/* failing's answer for the finding at `index` with its plain value: 1 go on, 0 give up, -1 error. */
static int
fail_one(PyObject *const *args, PyObject *items, PyObject *raw, PyObject *value, PyObject *clean, Py_ssize_t index)
{
    PyObject *position = PyLong_FromSsize_t(index);
    if (position == NULL)
        return -1;
    PyObject *call[7] = {items, raw, value, clean, position, args[5], args[6]};
    PyObject *kept = PyObject_Vectorcall(args[4], call, 7, NULL);
    Py_DECREF(position);
    if (kept == NULL)
        return -1;
    int go = PyObject_IsTrue(kept);
    Py_DECREF(kept);
    return go;
}

/* A failing finding: 1 go on, 0 give up, -1 error. `shallow` is the bracket count below which a finding cannot
 * nest too deeply (-1: unknown, always ask failing). */
static int
failed(PyObject *const *args, PyObject *items, PyObject *raw, PyObject *clean, int is_clean, Py_ssize_t index,
       Py_ssize_t shallow)
{
    PyObject *value = PyObject_Vectorcall(args[3], &raw, 1, NULL);
    if (value == NULL)
        return -1;
    int go;
    if (is_clean && shallow >= 0) {
        Py_ssize_t count = brackets(raw);
        if (count < 0)
            go = -1;
        else if (count < shallow)
            go = PyList_Append(items, value) < 0 ? -1 : 1;
        else
            go = fail_one(args, items, raw, value, clean, index);
    }
    else
        go = fail_one(args, items, raw, value, clean, index);
    Py_DECREF(value);
    return go;
}

PyObject *
itemwise_items(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8 || !PyList_CheckExact(args[2]) || !PyTuple_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError,
                        "itemwise(decode, scan, raws: list, plain, failing, repeats, max_depth, errors: tuple)");
        return NULL;
    }
    PyObject *decode = args[0], *scan = args[1], *raws = args[2], *errors = args[7];
    /* failing's depth test: brackets + 2 > max_depth; below max_depth - 1 brackets it cannot be true */
    Py_ssize_t shallow = -1;
    if (PyLong_CheckExact(args[6])) {
        int overflow;
        long long depth = PyLong_AsLongLongAndOverflow(args[6], &overflow);
        if (depth == -1 && PyErr_Occurred())
            return NULL;
        if (!overflow && depth >= 1 && depth <= PY_SSIZE_T_MAX / 2)
            shallow = (Py_ssize_t)depth - 1;
    }
    PyObject *items = PyList_New(0), *raw, *clean;
    if (items == NULL)
        return NULL;
    /* the size is read again each time: a callback could (absurdly) change the list, as it could under enumerate */
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(raws); index++) {
        raw = Py_NewRef(PyList_GET_ITEM(raws, index));
        clean = scan == Py_None ? Py_NewRef(Py_True) : PyObject_Vectorcall(scan, &raw, 1, NULL);
        if (clean == NULL)
            goto error_raw;
        int is_clean = clean == Py_True ? 1 : PyObject_IsTrue(clean);
        if (is_clean < 0)
            goto error_clean;
        if (is_clean) {
            PyObject *item = PyObject_Vectorcall(decode, &raw, 1, NULL);
            if (item != NULL) {
                int appended = PyList_Append(items, item);
                Py_DECREF(item);
                Py_DECREF(clean);
                Py_DECREF(raw);
                if (appended < 0)
                    goto error;
                continue;
            }
            if (!PyErr_ExceptionMatches(errors))
                goto error_clean;
            PyErr_Clear();
        }
        int go = failed(args, items, raw, clean, is_clean, index, shallow);
        Py_DECREF(clean);
        Py_DECREF(raw);
        if (go < 0)
            goto error;
        if (!go) {
            Py_DECREF(items);
            Py_RETURN_NONE;
        }
    }
    return items;

error_clean:
    Py_DECREF(clean);
error_raw:
    Py_DECREF(raw);
error:
    Py_DECREF(items);
    return NULL;
}
