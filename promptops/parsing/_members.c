/* The member count of a decoded typed response (the _place extension's decoded_members and checked; the reference
 * is TypedShape.members): object members at any depth, each finding's slots read at offsets resolved once per call.
 */
#include "_place.h"

/* The members a decoded value holds (object members at any depth; see decoded_members). -1 on error. */
static Py_ssize_t
members_in(PyObject *value, const Count *count);

/* What one slot `field` of a typed Struct adds to its members: 1 when it is set, plus the members nested in its
 * value; -1 on error. An object slot of the Struct's own type is read in place (borrowed), anything else through
 * field_of. */
static Py_ssize_t
slot_members(PyObject *obj, PyObject *field, const Count *count)
{
    PyObject *value = NULL, *owned = NULL;
    if (Py_IS_TYPE(field, &PyMemberDescr_Type)) {
        PyMemberDescrObject *descr = (PyMemberDescrObject *)field;
        PyMemberDef *member = descr->d_member;
        if ((member->type == T_OBJECT_EX || member->type == T_OBJECT) && Py_IS_TYPE(obj, descr->d_common.d_type))
            value = *(PyObject **)((char *)obj + member->offset);
    }
    if (value == NULL && (value = owned = field_of(obj, field)) == NULL)
        return -1;
    Py_ssize_t total = 0;
    if (value != count->unset) {
        total = 1;
        PyTypeObject *type = Py_TYPE(value);
        if (type == count->item_type || type == &PyList_Type || type == &PyDict_Type) {
            Py_ssize_t inner = members_in(value, count);
            total = inner < 0 ? -1 : total + inner;
        }
    }
    Py_XDECREF(owned);
    return total;
}

/* Members of a typed Struct: one per slot in `slots` that is set, plus those nested in its values. */
Py_ssize_t
struct_members(PyObject *obj, PyObject *slots, const Count *count)
{
    Py_ssize_t total = 0, n = PyTuple_GET_SIZE(slots);
    for (Py_ssize_t i = 0; i < n && total >= 0; i++) {
        Py_ssize_t inner = slot_members(obj, PyTuple_GET_ITEM(slots, i), count);
        total = inner < 0 ? -1 : total + inner;
    }
    return total;
}

/* struct_members for a finding, its slots read at the offsets of the layout where it has one: the commonest
 * values (a scalar, or unset) cost a load and two compares. */
static Py_ssize_t
item_members(PyObject *item, const Count *count)
{
    if (count->n < 0)
        return struct_members(item, count->item_slots, count);
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < count->n && total >= 0; i++) {
        PyObject *value = *(PyObject **)((char *)item + count->offsets[i]);
        if (value == count->unset)
            continue;
        PyTypeObject *type = value == NULL ? NULL : Py_TYPE(value);
        if (type == NULL || type == count->item_type || type == &PyList_Type || type == &PyDict_Type) {
            Py_ssize_t inner = slot_members(item, PyTuple_GET_ITEM(count->item_slots, i), count);
            total = inner < 0 ? -1 : total + inner;
        }
        else
            total++;
    }
    return total;
}

/* The Count for these findings: with a layout when every item slot is an object slot of item_type. */
void
count_init(Count *count, PyTypeObject *item_type, PyObject *item_slots, PyObject *unset)
{
    count->item_type = item_type;
    count->item_slots = item_slots;
    count->unset = unset;
    count->n = PyTuple_GET_SIZE(item_slots);
    if (count->n > LAYOUT_MAX)
        count->n = -1;
    for (Py_ssize_t i = 0; i < count->n; i++) {
        PyObject *field = PyTuple_GET_ITEM(item_slots, i);
        PyMemberDescrObject *descr = (PyMemberDescrObject *)field;
        if (!Py_IS_TYPE(field, &PyMemberDescr_Type) || descr->d_member->type != T_OBJECT_EX ||
            descr->d_common.d_type != item_type) {
            count->n = -1;
            return;
        }
        count->offsets[i] = descr->d_member->offset;
    }
}

static Py_ssize_t
members_in(PyObject *value, const Count *count)
{
    if (Py_IS_TYPE(value, count->item_type))
        return item_members(value, count);
    int is_list = PyList_CheckExact(value), is_dict = !is_list && PyDict_CheckExact(value);
    if (!is_list && !is_dict)
        return 0;
    if (Py_EnterRecursiveCall(" counting members"))
        return -1;
    Py_ssize_t total = 0;
    if (is_list) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value) && total >= 0; i++) {
            Py_ssize_t inner = members_in(PyList_GET_ITEM(value, i), count);
            total = inner < 0 ? -1 : total + inner;
        }
    }
    else {
        PyObject *key, *member;
        Py_ssize_t pos = 0;
        total = PyDict_GET_SIZE(value);
        while (total >= 0 && PyDict_Next(value, &pos, &key, &member)) {
            Py_ssize_t inner = members_in(member, count);
            total = inner < 0 ? -1 : total + inner;
        }
    }
    Py_LeaveRecursiveCall();
    return total;
}

