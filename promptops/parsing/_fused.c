/* accept(bound, data, changed) -> outcome | tuple: the accepted route of fastpath.FastPath.parse in one C call
 * (part of the _place extension), for a response whose versions come from its own text. FastPath.accept_reference
 * is the reference: the C scanner's member count, the typed decoding, the versions cache (only a cached True goes
 * on), the member count and placement check of `checked`, the open-object probe, and the clean outcome.
 *
 * It returns the outcome when the response is accepted on this route. Otherwise, with no exception set, what the
 * caller needs to go on without doing the same work again: (count, decoded, declared, placed). `count` is the
 * scanner's count; `decoded` is None when the count declined before decoding (an edge has whitespace), else what
 * the decoder returned or raised; `declared` is the schema version the text declares as the parser's version peek
 * reads it (fastpath.version_peek: the first match of "FIELD"\s*:\s*"([^"\\]*)", its group decoded as UTF-8 with
 * replacement; None when nothing matches); `placed` is what `checked` answers for the decoded response when this
 * call got that far (versions known good, findings a list), else None. The caller runs FastPath.parse with them,
 * which decides exactly as without this call. Only an error of the count itself is raised, as the caller's own
 * call of it would raise it; when the tuple cannot be built, the count alone is returned.
 *
 * bound = (count, decode, versions, versions_ok, items, changed_type, listed, plan, open_probe, duplicate_ids,
 * cls, peek), built once per FastPath: the scanner's count, the decoder's decode, the getters of the versions pair
 * and of the findings (as the member descriptors they read, a pair for the versions, when they are plain attrgetters
 * of slots), the versions cache (a dict), the ChangedFiles class and the member descriptor of the view
 * the findings' paths are compared with (read directly from a ChangedFiles, by name from anything else),
 * _place.checked's plan, the probe (None, a getter, or a member descriptor), TypedShape.duplicate_ids, the outcome
 * class, and the peek's quoted field name as (bytes, str).
 */
#include "_place.h"

enum { COUNT, DECODE, VERSIONS, VERSIONS_OK, ITEMS, CHANGED_TYPE, LISTED, PLAN, OPEN_PROBE, DUPLICATES, CLS, PEEK, NBOUND };

static inline PyObject *
call1(PyObject *callable, PyObject *arg)
{
    return PyObject_Vectorcall(callable, &arg, 1, NULL);
}

/* What a getter of the decoded response reads: a member descriptor's slot (see field_of), else the getter's call. */
static inline PyObject *
read_slot(PyObject *getter, PyObject *obj)
{
    return Py_IS_TYPE(getter, &PyMemberDescr_Type) ? field_of(obj, getter) : call1(getter, obj);
}

/* The declared versions: a pair of member descriptors read into a tuple, else the getter's call. */
static PyObject *
read_versions(PyObject *getter, PyObject *obj)
{
    if (!PyTuple_CheckExact(getter))
        return call1(getter, obj);
    PyObject *schema = field_of(obj, PyTuple_GET_ITEM(getter, 0));
    if (schema == NULL)
        return NULL;
    PyObject *prompt = field_of(obj, PyTuple_GET_ITEM(getter, 1));
    PyObject *versions = prompt == NULL ? NULL : PyTuple_Pack(2, schema, prompt);
    Py_DECREF(schema);
    Py_XDECREF(prompt);
    return versions;
}

#define CACHE_SCAN_MAX 8 /* up to this many cached pairs, comparing strings beats hashing the fresh ones */

static inline int
plain_pair(PyObject *pair)
{
    return PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2 && plain_str(PyTuple_GET_ITEM(pair, 0)) &&
           plain_str(PyTuple_GET_ITEM(pair, 1));
}

/* versions_ok.get(versions), borrowed (NULL: absent, or an error is set). A pair of exact strs is compared with a
 * few cached pairs of exact strs in place: equal exactly when the dict would find it, without hashing the two
 * strs the decoder has just made. */
static PyObject *
cached(PyObject *cache, PyObject *versions)
{
    if (PyDict_GET_SIZE(cache) <= CACHE_SCAN_MAX && plain_pair(versions)) {
        PyObject *schema = PyTuple_GET_ITEM(versions, 0), *prompt = PyTuple_GET_ITEM(versions, 1), *key, *value;
        Py_ssize_t pos = 0;
        int plain = 1;
        while (plain && PyDict_Next(cache, &pos, &key, &value)) {
            plain = plain_pair(key);
            if (plain && same_str(PyTuple_GET_ITEM(key, 0), schema) && same_str(PyTuple_GET_ITEM(key, 1), prompt))
                return value;
        }
        if (plain)
            return NULL;
    }
    return PyDict_GetItemWithError(cache, versions);
}

/* The outcome when the decoded `obj` (of `count` members in the text) is accepted as it is; NULL when it is not
 * (an exception may be set: the caller clears it). `*placed` gets what _place.checked answers for `obj` when it
 * gets that far, and stays -2 otherwise. */
static PyObject *
accepted(PyObject *const *bound, PyObject *obj, PyObject *changed, Py_ssize_t count, int *placed)
{
    PyObject *versions = read_versions(bound[VERSIONS], obj);
    if (versions == NULL)
        return NULL;
    PyObject *known = cached(bound[VERSIONS_OK], versions); /* borrowed */
    PyObject *items = NULL, *listed = NULL, *diagnostics = NULL, *findings = NULL, *outcome = NULL;
    if (known != Py_True)
        goto done;
    if ((items = read_slot(bound[ITEMS], obj)) == NULL || !PyList_Check(items))
        goto done;
    PyObject *descr = bound[LISTED];
    listed = Py_IS_TYPE(changed, (PyTypeObject *)bound[CHANGED_TYPE]) ? field_of(changed, descr)
                                                                       : PyObject_GetAttr(changed, PyDescr_NAME(descr));
    if (listed == NULL || !PyTuple_Check(listed))
        goto done;
    PyObject *const *plan = &PyTuple_GET_ITEM(bound[PLAN], 0);
    Count members;
    count_init(&members, (PyTypeObject *)plan[1], plan[2], plan[7]);
    Py_ssize_t total = struct_members(obj, plan[0], &members);
    if (total != count) { /* -1 (cannot tell) included, as checked clears its error and answers -1 */
        *placed = -1;
        goto done;
    }
    int verdict = placed_verdict(items, plan + 3, listed, plan[7]);
    if (verdict < 0) /* an error: checked would raise it, and the caller's call of it meets it again */
        goto done;
    *placed = verdict;
    if (verdict == 1) /* some finding out of place */
        goto done;
    if (bound[OPEN_PROBE] != Py_None) {
        PyObject *probe = read_slot(bound[OPEN_PROBE], obj);
        int open = probe == NULL ? -1 : PyObject_IsTrue(probe);
        Py_XDECREF(probe);
        if (open != 0) /* an open object to look into (FastPath.parse asks TypedShape.shallow) */
            goto done;
    }
    diagnostics = verdict == 2 ? call1(bound[DUPLICATES], items) : PyList_New(0);
    if (diagnostics == NULL || (findings = PyLong_FromSsize_t(PyList_GET_SIZE(items))) == NULL)
        goto done;
    PyObject *args[5] = {bound[CLS], diagnostics, obj, versions, findings};
    outcome = outcome_clean(NULL, args, 5);
done:
    Py_DECREF(versions);
    Py_XDECREF(items);
    Py_XDECREF(listed);
    Py_XDECREF(diagnostics);
    Py_XDECREF(findings);
    return outcome;
}

/* \s of a bytes pattern (ASCII whitespace), and of a str pattern (Unicode whitespace). */
#define BYTES_SPACE(c) ((c) == ' ' || ((c) >= '\t' && (c) <= '\r'))

/* Where `needle` (m > 0 bytes) first occurs in s[from:n], or -1. */
static Py_ssize_t
find_bytes(const char *s, Py_ssize_t n, Py_ssize_t from, const char *needle, Py_ssize_t m)
{
    while (n - from >= m) {
        const char *hit = memchr(s + from, needle[0], (size_t)(n - from - m + 1));
        if (hit == NULL)
            return -1;
        if (memcmp(hit, needle, (size_t)m) == 0)
            return hit - s;
        from = hit - s + 1;
    }
    return -1;
}

/* The version peek on bytes: the regex's first match is at the first occurrence of the quoted field name that the
 * rest of the pattern follows (no part of it can match in two ways), its group the unescaped text up to a quote. */
static PyObject *
peek_bytes(PyObject *data, PyObject *needle)
{
    const char *s = PyBytes_AS_STRING(data), *quoted = PyBytes_AS_STRING(needle);
    Py_ssize_t n = PyBytes_GET_SIZE(data), m = PyBytes_GET_SIZE(needle), at = 0;
    while ((at = find_bytes(s, n, at, quoted, m)) >= 0) {
        Py_ssize_t i = at + m;
        while (i < n && BYTES_SPACE(s[i]))
            i++;
        if (i < n && s[i] == ':') {
            for (i++; i < n && BYTES_SPACE(s[i]); i++)
                ;
            if (i < n && s[i] == '"') {
                Py_ssize_t start = ++i;
                while (i < n && s[i] != '"' && s[i] != '\\')
                    i++;
                if (i < n && s[i] == '"')
                    return PyUnicode_DecodeUTF8(s + start, i - start, "replace");
            }
        }
        at++;
    }
    Py_RETURN_NONE;
}

/* The version peek on a str, as peek_bytes. */
static PyObject *
peek_str(PyObject *data, PyObject *needle)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(data), m = PyUnicode_GET_LENGTH(needle), at = 0;
    int kind = PyUnicode_KIND(data);
    const void *s = PyUnicode_DATA(data);
    while (at <= n - m && (at = PyUnicode_Find(data, needle, at, n, 1)) >= 0) {
        Py_ssize_t i = at + m;
        while (i < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, s, i)))
            i++;
        if (i < n && PyUnicode_READ(kind, s, i) == ':') {
            for (i++; i < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, s, i)); i++)
                ;
            if (i < n && PyUnicode_READ(kind, s, i) == '"') {
                Py_ssize_t start = ++i;
                Py_UCS4 c = 0;
                while (i < n && (c = PyUnicode_READ(kind, s, i)) != '"' && c != '\\')
                    i++;
                if (i < n && c == '"')
                    return PyUnicode_Substring(data, start, i);
            }
        }
        at++;
    }
    if (at == -2)
        return NULL;
    Py_RETURN_NONE;
}

/* What the caller goes on with when the response is not accepted here (see the top): the tuple, else the count
 * alone. Steals nothing. */
static PyObject *
handed(PyObject *const *bound, PyObject *data, PyObject *scanned, PyObject *decoded, int placed)
{
    PyObject *needle = bound[PEEK], *result = NULL, *declared = NULL;
    if (PyBytes_Check(data))
        declared = peek_bytes(data, PyTuple_GET_ITEM(needle, 0));
    else if (PyUnicode_Check(data) && PyUnicode_READY(data) == 0)
        declared = peek_str(data, PyTuple_GET_ITEM(needle, 1));
    if (declared != NULL) {
        PyObject *verdict = placed < -1 ? Py_NewRef(Py_None) : PyLong_FromLong(placed);
        if (verdict != NULL)
            result = PyTuple_Pack(4, scanned, decoded, declared, verdict);
        Py_XDECREF(verdict);
        Py_DECREF(declared);
    }
    if (result == NULL) {
        PyErr_Clear(); /* then FastPath.parse decodes again, and the parser peeks itself */
        result = Py_NewRef(scanned);
    }
    return result;
}

static int
bound_ok(PyObject *bound)
{
    if (!PyTuple_CheckExact(bound) || PyTuple_GET_SIZE(bound) != NBOUND)
        return 0;
    PyObject *const *b = &PyTuple_GET_ITEM(bound, 0);
    PyObject *versions = b[VERSIONS], *peek = b[PEEK];
    if (PyTuple_CheckExact(versions) && (PyTuple_GET_SIZE(versions) != 2 ||
                                         !Py_IS_TYPE(PyTuple_GET_ITEM(versions, 0), &PyMemberDescr_Type) ||
                                         !Py_IS_TYPE(PyTuple_GET_ITEM(versions, 1), &PyMemberDescr_Type)))
        return 0;
    if (!PyDict_CheckExact(b[VERSIONS_OK]) || !PyType_Check(b[CHANGED_TYPE]) ||
        !Py_IS_TYPE(b[LISTED], &PyMemberDescr_Type) || !PyType_Check(b[CLS]) || !PyTuple_Check(b[PLAN]) ||
        PyTuple_GET_SIZE(b[PLAN]) != 8)
        return 0;
    if (!PyTuple_CheckExact(peek) || PyTuple_GET_SIZE(peek) != 2 || !PyBytes_CheckExact(PyTuple_GET_ITEM(peek, 0)) ||
        PyBytes_GET_SIZE(PyTuple_GET_ITEM(peek, 0)) == 0 || !plain_str(PyTuple_GET_ITEM(peek, 1)) ||
        PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(peek, 1)) == 0)
        return 0;
    PyObject *const *plan = &PyTuple_GET_ITEM(b[PLAN], 0);
    return PyTuple_Check(plan[0]) && PyType_Check(plan[1]) && PyTuple_Check(plan[2]);
}

PyObject *
fused_accept(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !bound_ok(args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "accept(bound: tuple of count, decode, versions, versions_ok: dict, items, changed_type, "
                        "listed: member descriptor, plan: tuple, open_probe, duplicate_ids, cls, "
                        "peek: (bytes, str); data, changed)");
        return NULL;
    }
    PyObject *const *bound = &PyTuple_GET_ITEM(args[0], 0);
    PyObject *data = args[1];
    PyObject *scanned = call1(bound[COUNT], data);
    if (scanned == NULL)
        return NULL;
    Py_ssize_t count = PyLong_AsSsize_t(scanned);
    if (count == -1 && PyErr_Occurred()) {
        Py_DECREF(scanned);
        return NULL;
    }
    PyObject *result;
    if (count < 0) { /* whitespace at an edge of a string: FastPath.parse declines at once */
        result = handed(bound, data, scanned, Py_None, -2);
        Py_DECREF(scanned);
        return result;
    }
    PyObject *obj = call1(bound[DECODE], data);
    if (obj == NULL) { /* the decoder's exception, for FastPath.parse to handle as its own */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (value != NULL && (traceback == NULL || PyException_SetTraceback(value, traceback) == 0))
            result = handed(bound, data, scanned, value, -2);
        else {
            PyErr_Clear(); /* then FastPath.parse decodes again, and meets the same error */
            result = Py_NewRef(scanned);
        }
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        Py_DECREF(scanned);
        return result;
    }
    int placed = -2;
    result = accepted(bound, obj, args[2], count, &placed);
    if (result == NULL) {
        PyErr_Clear(); /* FastPath.parse goes on from the decoded response, and meets any such error again */
        result = handed(bound, data, scanned, obj, placed);
    }
    Py_DECREF(obj);
    Py_DECREF(scanned);
    return result;
}
