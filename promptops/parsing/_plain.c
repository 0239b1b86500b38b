/* Optional speedup for the field-by-field check of one plain finding (the reference is
 * Findings._finding in promptops/parsing/findings.py; plaincheck.py builds the spec this reads).
 *
 * check(item, spec, base, changed) -> None | Problem | (kept, coercions)
 *
 * None means "not handled": a rule or value this helper does not cover (a whole float line, a failed quick
 * test of an uncovered field...), and Python decides the whole finding. Otherwise the answer is exactly the
 * reference's: the first fault by rank with its path and message, or the kept finding in schema order with
 * the Coercions applied, in field order.
 *
 * spec = (fields, required, line, end_line, path, trim, numeric_lines, path_separators, member, Problem,
 *         Coercion, codes), where fields maps each property (schema order) to
 * (kind, suffix, position, required, ...), the kind's own entries last:
 *   OTHER (0, ..., quick)                        kept when quick(value), else not handled
 *   STR   (1, ..., min_length, max_length, nullable, is_path, types_text)
 *   ENUM  (2, ..., allowed (frozenset), enum_text, types_text)
 *   LINE  (3, ..., minimum)
 * suffix is the member's path after its parent ("findings[3]" + ".line"), position its index in fields and
 * required whether it is a required field; required holds (name, suffix) pairs; codes are the Code members
 * named in CODE_* below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

enum { K_OTHER, K_STR, K_ENUM, K_LINE };
enum { RANK_TYPE, RANK_CONSTRAINT, RANK_ENUM, RANK_LINE };
enum { CODE_MISSING, CODE_UNKNOWN, CODE_INVALID_FIELD, CODE_INVALID_ENUM, CODE_INVALID_LINE, CODE_END_BEFORE,
       CODE_NOT_CHANGED, CODE_TRIMMED, CODE_SEPARATOR, CODE_NUMERIC, N_CODES };
enum { S_FIELDS, S_REQUIRED, S_LINE, S_END, S_PATH, S_TRIM, S_NUMERIC, S_SEPARATORS, S_MEMBER, S_PROBLEM, S_COERCION,
       S_CODES, N_SPEC };

#define NOT_HANDLED ((PyObject *)1) /* internal: not an error, Python decides */

/* Value helpers, in _plain_values.c (the same extension module). */
PyObject *plain_named(PyObject *cls, PyObject *items);
PyObject *plain_show(PyObject *value);
int plain_is_space_edge(PyObject *s);
PyObject *plain_integral_string(PyObject *s);
int plain_listed_has(PyObject *changed, PyObject *path);

typedef struct {
    PyObject **spec;
    PyObject *codes; /* tuple */
    PyObject *base;
    PyObject *applied; /* list of Coercions */
    int rank;          /* best problem so far: -1 none */
    PyObject *code, *where, *message;
} State;

static int
coerce(State *st, int code, PyObject *where, PyObject *message)
{
    if (message == NULL)
        return -1;
    PyObject *c = plain_named(st->spec[S_COERCION], PyTuple_Pack(3, PyTuple_GET_ITEM(st->codes, code), where, message));
    Py_DECREF(message);
    if (c == NULL)
        return -1;
    int r = PyList_Append(st->applied, c);
    Py_DECREF(c);
    return r;
}

/* Records a problem (steals message); only the first of the lowest rank is kept, as min() does. */
static int
problem(State *st, int rank, int code, PyObject *where, PyObject *message)
{
    if (message == NULL)
        return -1;
    if (st->rank >= 0 && st->rank <= rank) {
        Py_DECREF(message);
        return 0;
    }
    Py_XDECREF(st->where);
    Py_XDECREF(st->message);
    Py_INCREF(where);
    st->rank = rank, st->code = PyTuple_GET_ITEM(st->codes, code), st->where = where, st->message = message;
    return 0;
}

/* Type problem: "{where}: expected {types}, got {show}". 0, -1 error, 1 not handled. */
static int
type_problem(State *st, PyObject *where, PyObject *types_text, PyObject *value)
{
    PyObject *shown = plain_show(value);
    if (shown == NULL)
        return -1;
    if (shown == NOT_HANDLED)
        return 1;
    PyObject *msg = PyUnicode_FromFormat("%U: expected %U, got %U", where, types_text, shown);
    Py_DECREF(shown);
    return problem(st, RANK_TYPE, CODE_INVALID_FIELD, where, msg);
}

#define ARG(i) PyTuple_GET_ITEM(rule, 4 + (i)) /* the kind's own entries, after kind, suffix, position, required */

/* One field: sets *kept (new reference) when the value is kept. 0 done, -1 error, 1 not handled. */
static int
check_field(State *st, PyObject *rule, PyObject *value, PyObject **kept)
{
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(rule, 0));
    PyObject *suffix = PyTuple_GET_ITEM(rule, 1);
    PyObject *where = NULL, *v = value;
    int status = 0;
    *kept = NULL;
    if (kind == K_OTHER) {
        PyObject *quick = ARG(0);
        if (quick == Py_None)
            return 1;
        PyObject *ok = PyObject_CallOneArg(quick, value);
        if (ok == NULL)
            return -1;
        int yes = PyObject_IsTrue(ok);
        Py_DECREF(ok);
        if (yes < 0)
            return -1;
        if (!yes)
            return 1;
        Py_INCREF(value);
        *kept = value;
        return 0;
    }
#define NEED_WHERE()                                                                           \
    do {                                                                                       \
        if (where == NULL && (where = PyUnicode_Concat(st->base, suffix)) == NULL)             \
            goto error;                                                                        \
    } while (0)
    Py_INCREF(v);
    if (PyUnicode_CheckExact(v) && st->spec[S_TRIM] == Py_True && plain_is_space_edge(v)) {
        PyObject *t = PyObject_CallMethod(v, "strip", NULL);
        if (t == NULL)
            goto error;
        int changed = PyUnicode_GET_LENGTH(t) != PyUnicode_GET_LENGTH(v);
        Py_SETREF(v, t);
        NEED_WHERE();
        if (changed && coerce(st, CODE_TRIMMED, where, PyUnicode_FromFormat("%U: surrounding whitespace trimmed", where)) < 0)
            goto error;
    }
    if (kind == K_LINE) {
        if (st->spec[S_NUMERIC] == Py_True) {
            if (PyUnicode_CheckExact(v)) {
                PyObject *number = plain_integral_string(v);
                if (number == NULL)
                    goto error;
                if (number != Py_None) {
                    if (where == NULL && (where = PyUnicode_Concat(st->base, suffix)) == NULL) {
                        Py_DECREF(number);
                        goto error;
                    }
                    PyObject *msg = PyUnicode_FromFormat("%U: string %R converted to integer %S", where, v, number);
                    Py_SETREF(v, number);
                    if (coerce(st, CODE_NUMERIC, where, msg) < 0)
                        goto error;
                } else {
                    Py_DECREF(number);
                }
            } else if (PyFloat_CheckExact(v)) {
                status = 1; /* whole floats are converted too: left to Python */
                goto done;
            }
        }
        int bad = !PyLong_CheckExact(v);
        PyObject *minimum = ARG(0);
        const char *text = "is not a line number (an integer >= 1)";
        if (!bad) {
            int overflow;
            long small = PyLong_AsLongAndOverflow(v, &overflow);
            if (small == -1 && PyErr_Occurred())
                goto error;
            bad = overflow < 0 || (overflow == 0 && small < 1);
        }
        if (!bad && minimum != Py_None) {
            bad = PyObject_RichCompareBool(v, minimum, Py_LT);
            if (bad < 0)
                goto error;
            text = NULL;
        }
        if (bad) {
            PyObject *shown = plain_show(v);
            if (shown == NULL)
                goto error;
            if (shown == NOT_HANDLED) {
                status = 1;
                goto done;
            }
            if (where == NULL && (where = PyUnicode_Concat(st->base, suffix)) == NULL) {
                Py_DECREF(shown);
                goto error;
            }
            PyObject *msg = text ? PyUnicode_FromFormat("%U: %U %s", where, shown, text)
                                 : PyUnicode_FromFormat("%U: %U is not >= %S", where, shown, minimum);
            Py_DECREF(shown);
            if (problem(st, RANK_LINE, CODE_INVALID_LINE, where, msg) < 0)
                goto error;
            goto done;
        }
    } else if (kind == K_STR) {
        PyObject *low = ARG(0), *high = ARG(1);
        if (!PyUnicode_CheckExact(v)) {
            if (v == Py_None && ARG(2) == Py_True)
                goto keep;
            NEED_WHERE();
            status = type_problem(st, where, ARG(4), v);
            if (status < 0)
                goto error;
            goto done;
        }
        if (ARG(3) == Py_True && st->spec[S_SEPARATORS] == Py_True &&
            PyUnicode_FindChar(v, '\\', 0, PyUnicode_GET_LENGTH(v), 1) >= 0) {
            PyObject *slash = PyUnicode_FromOrdinal('/'), *back = PyUnicode_FromOrdinal('\\');
            PyObject *r = (slash && back) ? PyUnicode_Replace(v, back, slash, -1) : NULL;
            Py_XDECREF(slash);
            Py_XDECREF(back);
            if (r == NULL)
                goto error;
            Py_SETREF(v, r);
            NEED_WHERE();
            if (coerce(st, CODE_SEPARATOR, where, PyUnicode_FromFormat("%U: path separators '\\' -> '/'", where)) < 0)
                goto error;
        }
        Py_ssize_t n = PyUnicode_GET_LENGTH(v);
        PyObject *msg = NULL;
        if ((low != Py_None && n < PyLong_AsSsize_t(low)) || (high != Py_None && n > PyLong_AsSsize_t(high)))
            NEED_WHERE();
        if (low != Py_None && n < PyLong_AsSsize_t(low))
            msg = PyUnicode_FromFormat("%U: shorter than %S characters", where, low);
        else if (high != Py_None && n > PyLong_AsSsize_t(high))
            msg = PyUnicode_FromFormat("%U: longer than %S characters", where, high);
        if (PyErr_Occurred())
            goto error;
        if (msg != NULL) {
            if (problem(st, RANK_CONSTRAINT, CODE_INVALID_FIELD, where, msg) < 0)
                goto error;
            goto done;
        }
    } else if (kind == K_ENUM) {
        if (!PyUnicode_CheckExact(v)) {
            NEED_WHERE();
            status = type_problem(st, where, ARG(2), v);
            if (status < 0)
                goto error;
            goto done;
        }
        int in = PySet_Contains(ARG(0), v);
        if (in < 0)
            goto error;
        if (!in) {
            NEED_WHERE();
            PyObject *shown = plain_show(v);
            if (shown == NULL)
                goto error;
            PyObject *msg = PyUnicode_FromFormat("%U: %U is not one of %U", where, shown, ARG(1));
            Py_DECREF(shown);
            if (problem(st, RANK_ENUM, CODE_INVALID_ENUM, where, msg) < 0)
                goto error;
            goto done;
        }
    } else {
        status = 1;
        goto done;
    }
keep:
    *kept = v;
    Py_XDECREF(where);
    return 0;
done:
    Py_DECREF(v);
    Py_XDECREF(where);
    return status;
error:
    Py_DECREF(v);
    Py_XDECREF(where);
    return -1;
#undef NEED_WHERE
}

static PyObject *
make_problem(State *st, int rank, PyObject *code, PyObject *where, PyObject *message)
{
    PyObject *r = PyLong_FromLong(rank);
    if (r == NULL)
        return NULL;
    PyObject *p = plain_named(st->spec[S_PROBLEM], PyTuple_Pack(4, r, code, where, message));
    Py_DECREF(r);
    return p;
}

/* A rank-0 Problem with codes[code] at `where`; steals `where` and `message` (NULL: the error is passed on). */
static PyObject *
field_problem(State *st, int code, PyObject *where, PyObject *message)
{
    PyObject *p = message ? make_problem(st, 0, PyTuple_GET_ITEM(st->codes, code), where, message) : NULL;
    Py_DECREF(where);
    Py_XDECREF(message);
    return p;
}

/* Placement of the schema-ordered `out` (DESIGN.md §3.9): a Problem, Py_None when in place, NULL on error. */
static PyObject *
placement(State *st, PyObject *out, PyObject *fields, PyObject *changed)
{
    PyObject *line = st->spec[S_LINE], *end = st->spec[S_END], *path = st->spec[S_PATH];
    if (line != Py_None && end != Py_None) {
        PyObject *lv = PyDict_GetItemWithError(out, line), *ev = lv ? PyDict_GetItemWithError(out, end) : NULL;
        if (ev != NULL) {
            int before = PyObject_RichCompareBool(ev, lv, Py_LT);
            if (before < 0)
                return NULL;
            if (before) {
                PyObject *where = PyUnicode_Concat(st->base, PyTuple_GET_ITEM(PyDict_GetItem(fields, end), 1));
                if (where == NULL)
                    return NULL;
                return field_problem(st, CODE_END_BEFORE, where,
                    PyUnicode_FromFormat("%U: %S is before line %S", where, ev, lv));
            }
        }
        if (PyErr_Occurred())
            return NULL;
    }
    if (path != Py_None) {
        PyObject *pv = PyDict_GetItemWithError(out, path);
        if (pv != NULL) {
            int in = plain_listed_has(changed, pv);
            if (in == 0)
                in = PySequence_Contains(changed, pv);
            if (in < 0)
                return NULL;
            if (!in) {
                PyObject *where = PyUnicode_Concat(st->base, PyTuple_GET_ITEM(PyDict_GetItem(fields, path), 1));
                if (where == NULL)
                    return NULL;
                return field_problem(st, CODE_NOT_CHANGED, where,
                    PyUnicode_FromFormat("%U: %R is not a changed file", where, pv));
            }
        } else if (PyErr_Occurred()) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

#define MAX_FIELDS 64

static PyObject *
check(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || !PyTuple_CheckExact(args[1]) || PyTuple_GET_SIZE(args[1]) != N_SPEC ||
        !PyUnicode_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "check(item, spec, base, changed)");
        return NULL;
    }
    PyObject *item = args[0], *changed = args[3];
    if (!PyDict_CheckExact(item))
        Py_RETURN_NONE;
    State st = {&PyTuple_GET_ITEM(args[1], 0), NULL, args[2], NULL, -1, NULL, NULL, NULL};
    st.codes = st.spec[S_CODES];
    PyObject *fields = st.spec[S_FIELDS], *required = st.spec[S_REQUIRED];
    Py_ssize_t n = PyDict_GET_SIZE(item);
    if (n > MAX_FIELDS || PyDict_GET_SIZE(fields) > MAX_FIELDS)
        Py_RETURN_NONE;
    PyObject *rules[MAX_FIELDS], *values[MAX_FIELDS], *kept[MAX_FIELDS];
    PyObject *result = NULL, *ordered = NULL, *unknown = NULL;
    Py_ssize_t pos = 0, i = 0, present = 0;
    PyObject *key, *value;
    /* One lookup per member: its rule, whether it is required, the first unknown one. */
    while (PyDict_Next(item, &pos, &key, &value)) {
        PyObject *rule = PyDict_GetItemWithError(fields, key);
        if (rule == NULL) {
            if (PyErr_Occurred())
                return NULL;
            if (unknown == NULL)
                unknown = key;
        } else if (PyTuple_GET_ITEM(rule, 3) == Py_True) {
            present++;
        }
        rules[i] = rule, values[i] = value, i++;
    }
    if (present < PyTuple_GET_SIZE(required)) {
        for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(required); r++) {
            PyObject *pair = PyTuple_GET_ITEM(required, r);
            int has = PyDict_Contains(item, PyTuple_GET_ITEM(pair, 0));
            if (has < 0)
                return NULL;
            if (!has) {
                PyObject *where = PyUnicode_Concat(st.base, PyTuple_GET_ITEM(pair, 1));
                if (where == NULL)
                    return NULL;
                return field_problem(&st, CODE_MISSING, where,
                    PyUnicode_FromFormat("required field %U is missing", where));
            }
        }
    }
    if (unknown != NULL) {
        PyObject *where = PyObject_CallFunctionObjArgs(st.spec[S_MEMBER], st.base, unknown, NULL);
        if (where == NULL)
            return NULL;
        return field_problem(&st, CODE_UNKNOWN, where, PyUnicode_FromFormat("unknown field %S", where));
    }
    Py_ssize_t n_fields = PyDict_GET_SIZE(fields);
    for (Py_ssize_t f = 0; f < n_fields; f++)
        kept[f] = NULL;
    st.applied = PyList_New(0);
    if (st.applied == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *value_kept;
        int status = check_field(&st, rules[i], values[i], &value_kept);
        if (status < 0)
            goto finish;
        if (status > 0) {
            result = Py_None;
            Py_INCREF(result);
            goto finish;
        }
        if (value_kept != NULL) {
            Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(rules[i], 2));
            if (at < 0 || at >= n_fields) {
                Py_DECREF(value_kept);
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "field position out of range");
                goto finish;
            }
            Py_XSETREF(kept[at], value_kept);
        }
    }
    if (st.rank >= 0) {
        result = make_problem(&st, st.rank, st.code, st.where, st.message);
        goto finish;
    }
    ordered = PyDict_New();
    if (ordered == NULL)
        goto finish;
    /* Schema order: fields iterate in it, and each member's position is its index there. */
    pos = 0;
    Py_ssize_t f = 0;
    while (PyDict_Next(fields, &pos, &key, &value)) {
        if (kept[f] != NULL && PyDict_SetItem(ordered, key, kept[f]) < 0)
            goto finish;
        f++;
    }
    result = placement(&st, ordered, fields, changed);
    if (result == Py_None) {
        Py_DECREF(result);
        result = PyTuple_Pack(2, ordered, st.applied);
    }
finish:
    for (Py_ssize_t g = 0; g < n_fields; g++)
        Py_XDECREF(kept[g]);
    Py_XDECREF(ordered);
    Py_XDECREF(st.applied);
    Py_XDECREF(st.where);
    Py_XDECREF(st.message);
    return result;
}

static PyMethodDef methods[] = {
    {"check", (PyCFunction)(void (*)(void))check, METH_FASTCALL, "Findings._finding for the common rules."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_plain", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__plain(void)
{
    return PyModule_Create(&module);
}
