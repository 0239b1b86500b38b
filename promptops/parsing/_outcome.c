/* clean_outcome(cls, diagnostics, typed, versions, findings) -> cls: diagnostics.ParseOutcome.clean in C (part of
 * the _place extension), the one outcome the fast path builds for most responses. ParseOutcome.clean (Python) is
 * the reference: the same fourteen slots, set to the same values, on an instance made as cls.__new__(cls) makes
 * it. The slots' offsets are read from their descriptors on the first call for a class.
 */
#include "_place.h"
#include <string.h>

enum {
    MATERIALIZE, RESULT, TYPED, ACCEPTED, DIAGNOSTICS, EXTRACTED, COERCED, DROPPED, KEPT, SEEN, PROMPT, REASON,
    SCHEMA, TRUNCATED, NSLOTS
};

static const char *const slot_names[NSLOTS] = {
    "_materialize", "_result", "_typed", "accepted", "diagnostics", "extracted", "findings_coerced",
    "findings_dropped", "findings_kept", "findings_seen", "prompt_version", "reason", "schema_version", "truncated",
};

static PyTypeObject *known_type; /* the class whose offsets are below (a strong reference) */
static Py_ssize_t offsets[NSLOTS];

/* Reads the offsets of `type`'s slots: 0, or -1 with an exception set when one is not an object slot. */
static int
learn(PyTypeObject *type)
{
    Py_ssize_t found[NSLOTS];
    for (int i = 0; i < NSLOTS; i++) {
        PyObject *descr = PyObject_GetAttrString((PyObject *)type, slot_names[i]);
        if (descr == NULL)
            return -1;
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX &&
                 PyType_IsSubtype(type, ((PyMemberDescrObject *)descr)->d_common.d_type);
        if (ok)
            found[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "clean_outcome: %s.%s is not an object slot", type->tp_name, slot_names[i]);
            return -1;
        }
    }
    memcpy(offsets, found, sizeof offsets);
    Py_INCREF(type);
    Py_XSETREF(known_type, type);
    return 0;
}

PyObject *
outcome_clean(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyType_Check(args[0]) || !PyTuple_CheckExact(args[3]) || PyTuple_GET_SIZE(args[3]) != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "clean_outcome(cls: type, diagnostics, typed, versions: tuple[str, str], findings: int)");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    if (type != known_type && learn(type) < 0)
        return NULL;
    PyObject *outcome = type->tp_alloc(type, 0);
    if (outcome == NULL)
        return NULL;
    PyObject *zero = PyLong_FromLong(0); /* a cached small int */
    if (zero == NULL) {
        Py_DECREF(outcome);
        return NULL;
    }
    PyObject *values[NSLOTS] = {
        [MATERIALIZE] = Py_None, [RESULT] = Py_None, [TYPED] = args[2], [ACCEPTED] = Py_True,
        [DIAGNOSTICS] = args[1], [EXTRACTED] = Py_False, [COERCED] = zero, [DROPPED] = zero, [KEPT] = args[4],
        [SEEN] = args[4], [PROMPT] = PyTuple_GET_ITEM(args[3], 1), [REASON] = Py_None,
        [SCHEMA] = PyTuple_GET_ITEM(args[3], 0), [TRUNCATED] = Py_False,
    };
    for (int i = 0; i < NSLOTS; i++) {
        Py_INCREF(values[i]);
        *(PyObject **)((char *)outcome + offsets[i]) = values[i];
    }
    Py_DECREF(zero);
    return outcome;
}
