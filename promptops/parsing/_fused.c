/* accept(bound, data, changed) -> outcome | int: the accepted route of fastpath.FastPath.parse in one C call (part
 * of the _place extension), for a response whose versions come from its own text. FastPath.accept_reference is
 * the reference: the C scanner's member count, the typed decoding, the versions cache (only a cached True goes
 * on), the member count and placement check of `checked`, the open-object probe, and the clean outcome.
 *
 * It returns the outcome when the response is accepted on this route. Otherwise, with no exception set: the
 * scanner's count when it declined before decoding (the count says an edge has whitespace); (count, exception)
 * when the decoder raised that exception; else (count, decoded response) when it declined after decoding
 * (versions not known good, a finding out of place, members lost, an open object to look into, any error). The
 * caller then runs FastPath.parse with that count and what decoding gave, which decides exactly as without this
 * call. Only an error of the count itself is raised, as the caller's own call of it would raise it.
 *
 * bound = (count, decode, versions, versions_ok, items, changed_type, listed, plan, open_probe, duplicate_ids,
 * cls), built once per FastPath: the scanner's count, the decoder's decode, the getters of the versions pair and
 * of the findings (as the member descriptors they read, a pair for the versions, when they are plain attrgetters
 * of slots), the versions cache (a dict), the ChangedFiles class and the member descriptor of the view
 * the findings' paths are compared with (read directly from a ChangedFiles, by name from anything else),
 * _place.checked's plan, the probe (None, a getter, or a member descriptor), TypedShape.duplicate_ids, and the outcome class.
 */
#include "_place.h"

enum { COUNT, DECODE, VERSIONS, VERSIONS_OK, ITEMS, CHANGED_TYPE, LISTED, PLAN, OPEN_PROBE, DUPLICATES, CLS, NBOUND };

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
 * (an exception may be set: the caller clears it). */
static PyObject *
accepted(PyObject *const *bound, PyObject *obj, PyObject *changed, Py_ssize_t count)
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
    if (total != count) /* -1 (cannot tell) included: the caller clears its exception */
        goto done;
    int verdict = placed_verdict(items, plan + 3, listed, plan[7]);
    if (verdict < 0 || verdict == 1) /* an error, or some finding out of place */
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

static int
bound_ok(PyObject *bound)
{
    if (!PyTuple_CheckExact(bound) || PyTuple_GET_SIZE(bound) != NBOUND)
        return 0;
    PyObject *const *b = &PyTuple_GET_ITEM(bound, 0);
    PyObject *versions = b[VERSIONS];
    if (PyTuple_CheckExact(versions) && (PyTuple_GET_SIZE(versions) != 2 ||
                                         !Py_IS_TYPE(PyTuple_GET_ITEM(versions, 0), &PyMemberDescr_Type) ||
                                         !Py_IS_TYPE(PyTuple_GET_ITEM(versions, 1), &PyMemberDescr_Type)))
        return 0;
    if (!PyDict_CheckExact(b[VERSIONS_OK]) || !PyType_Check(b[CHANGED_TYPE]) ||
        !Py_IS_TYPE(b[LISTED], &PyMemberDescr_Type) || !PyType_Check(b[CLS]) || !PyTuple_Check(b[PLAN]) ||
        PyTuple_GET_SIZE(b[PLAN]) != 8)
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
                        "listed: member descriptor, plan: tuple, open_probe, duplicate_ids, cls; data, changed)");
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
    if (count < 0) /* whitespace at an edge of a string: FastPath.parse declines at once */
        return scanned;
    PyObject *obj = call1(bound[DECODE], data);
    if (obj == NULL) { /* (count, the decoder's exception), for FastPath.parse to handle as its own */
        PyObject *type, *value, *traceback, *handed = NULL;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (value != NULL && (traceback == NULL || PyException_SetTraceback(value, traceback) == 0))
            handed = PyTuple_Pack(2, scanned, value);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        if (handed == NULL) {
            PyErr_Clear(); /* then FastPath.parse decodes again, and meets the same error */
            return scanned;
        }
        Py_DECREF(scanned);
        return handed;
    }
    PyObject *outcome = accepted(bound, obj, args[2], count);
    if (outcome == NULL) {
        PyErr_Clear(); /* FastPath.parse goes on from the decoded response, and meets any such error again */
        outcome = PyTuple_Pack(2, scanned, obj);
        if (outcome == NULL) {
            PyErr_Clear(); /* then it decodes again */
            outcome = Py_NewRef(scanned);
        }
    }
    Py_DECREF(obj);
    Py_DECREF(scanned);
    return outcome;
}
