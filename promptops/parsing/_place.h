/* What the sources of the _place extension share (_place.c: placement checks and the module; _members.c: the
 * member count of decoded responses; _changed.c: the C base of ChangedFiles; _outcome.c: the clean outcome). */
#ifndef PROMPTOPS_PLACE_H
#define PROMPTOPS_PLACE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

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

/* _changed.c: plain_paths, and the Views type (the C base of reconcile.ChangedFiles). */
PyObject *changed_plain_paths(PyObject *module, PyObject *paths);
int changed_add_type(PyObject *module);

/* _outcome.c: clean_outcome. */
PyObject *outcome_clean(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
