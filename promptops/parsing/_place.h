/* What the sources of the _place extension share (_place.c: placement checks and the module; _members.c: the
 * member count of decoded responses; _changed.c: the C base of ChangedFiles; _outcome.c: the clean outcome;
 * _fused.c: the fast path's accepted route in one call). */
#ifndef PROMPTOPS_PLACE_H
#define PROMPTOPS_PLACE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* A field of a typed finding, given as its name or as the member descriptor of its slot: a slot read when the
 * descriptor describes an object slot of the item's type (what msgspec Structs use), else an attribute lookup.
 * New reference; NULL with an exception set. */
static ALWAYS_INLINE PyObject *
field_of(PyObject *item, PyObject *field)
{
    if (!Py_IS_TYPE(field, &PyMemberDescr_Type))
        return PyObject_GetAttr(item, field);
    PyMemberDescrObject *descr = (PyMemberDescrObject *)field;
    PyMemberDef *member = descr->d_member;
    if ((member->type == T_OBJECT_EX || member->type == T_OBJECT) && PyObject_TypeCheck(item, descr->d_common.d_type)) {
        PyObject *value = *(PyObject **)((char *)item + member->offset);
        if (value != NULL) {
            Py_INCREF(value);
            return value;
        }
    }
    return PyObject_GetAttr(item, PyDescr_NAME(field));
}

/* Exact str objects with the same characters (str.__eq__ for them); both must be ready. Lengths, kinds, hashes
 * when both are known, and the last character (where paths and ids usually differ) settle most unequal pairs
 * without a memcmp call. */
static inline int
same_str(PyObject *a, PyObject *b)
{
    Py_ssize_t len = PyUnicode_GET_LENGTH(a);
    if (a == b)
        return 1;
    if (PyUnicode_GET_LENGTH(b) != len || PyUnicode_KIND(a) != PyUnicode_KIND(b))
        return 0;
    Py_hash_t ha = ((PyASCIIObject *)a)->hash, hb = ((PyASCIIObject *)b)->hash;
    if (ha != -1 && hb != -1 && ha != hb)
        return 0;
    int kind = PyUnicode_KIND(a);
    const void *da = PyUnicode_DATA(a), *db = PyUnicode_DATA(b);
    if (len == 0)
        return 1;
    if (kind == PyUnicode_1BYTE_KIND && len >= 8) {
        /* paths share prefixes and suffixes ("src/", ".py"): the first and last eight bytes, loaded whole,
         * tell most apart without a memcmp call */
        unsigned long long x, y;
        memcpy(&x, da, 8);
        memcpy(&y, db, 8);
        if (x != y)
            return 0;
        memcpy(&x, (const char *)da + len - 8, 8);
        memcpy(&y, (const char *)db + len - 8, 8);
        return x == y && (len <= 16 || memcmp((const char *)da + 8, (const char *)db + 8, (size_t)len - 16) == 0);
    }
    if (PyUnicode_READ(kind, da, len - 1) != PyUnicode_READ(kind, db, len - 1))
        return 0;
    return memcmp(da, db, (size_t)len * kind) == 0;
}

static inline int
plain_str(PyObject *value)
{
#if PY_VERSION_HEX < 0x030C0000
    return PyUnicode_CheckExact(value) && PyUnicode_READY(value) == 0;
#else
    return PyUnicode_CheckExact(value);
#endif
}

#define LAYOUT_MAX 64

/* What counting members needs besides the value: the findings' Struct type and its slots, and where those slots
 * sit in a finding when each is a plain object slot (layout; n == -1 when not, and they are read as in
 * struct_members). */
typedef struct {
    PyTypeObject *item_type;
    PyObject *item_slots, *unset;
    Py_ssize_t n, offsets[LAYOUT_MAX];
} Count;

/* The Count for these findings: with a layout when every item slot is an object slot of item_type. */
void count_init(Count *count, PyTypeObject *item_type, PyObject *item_slots, PyObject *unset);
/* Members of a typed Struct: one per slot in `slots` that is set, plus those nested in its values; -1 on error. */
Py_ssize_t struct_members(PyObject *obj, PyObject *slots, const Count *count);

/* _place.c: placed's verdict (0, 1 or 2) on `items`, fields[0..3] the path, line, end_line and id fields; -1 on
 * error. */
int placed_verdict(PyObject *items, PyObject *const *fields, PyObject *listed, PyObject *unset);

/* _changed.c: plain_paths, and the Views type (the C base of reconcile.ChangedFiles). */
PyObject *changed_plain_paths(PyObject *module, PyObject *paths);
int changed_add_type(PyObject *module);

/* _outcome.c: clean_outcome. */
PyObject *outcome_clean(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* _fused.c: accept. */
PyObject *fused_accept(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* _itemwise.c: itemwise. */
PyObject *itemwise_items(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
