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
 *         Coercion, codes), where fields maps each property (schema order) to (kind, suffix, a, b, c, d):
 *   OTHER (0, suffix, quick)                        kept when quick(value), else not handled
 *   STR   (1, suffix, min_length, max_length, nullable, is_path, types_text)
 *   ENUM  (2, suffix, allowed (frozenset), enum_text, types_text)
 *   LINE  (3, suffix, minimum)
 * suffix is the member's path after its parent ("findings[3]" + ".line"); required holds (name, suffix)
 * pairs; codes are the Code members named in CODE_* below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

enum { K_OTHER, K_STR, K_ENUM, K_LINE };
enum { RANK_TYPE, RANK_CONSTRAINT, RANK_ENUM, RANK_LINE };
enum {
    CODE_MISSING,
    CODE_UNKNOWN,
    CODE_INVALID_FIELD,
    CODE_INVALID_ENUM,
    CODE_INVALID_LINE,
    CODE_END_BEFORE,
    CODE_NOT_CHANGED,
    CODE_TRIMMED,
    CODE_SEPARATOR,
    CODE_NUMERIC,
    N_CODES
};
enum {
    S_FIELDS,
    S_REQUIRED,
    S_LINE,
    S_END,
    S_PATH,
    S_TRIM,
    S_NUMERIC,
    S_SEPARATORS,
    S_MEMBER,
    S_PROBLEM,
    S_COERCION,
    S_CODES,
    N_SPEC
};

#define NOT_HANDLED ((PyObject *)1) /* internal: not an error, Python decides */

/* tuple.__new__(cls, items): a NamedTuple instance without running its Python-level __new__. Steals nothing. */
static PyObject *
named(PyObject *cls, PyObject *items)
{
    if (items == NULL)
        return NULL;
    PyObject *args = PyTuple_Pack(1, items);
    Py_DECREF(items);
    if (args == NULL)
        return NULL;
    PyObject *out = PyTuple_Type.tp_new((PyTypeObject *)cls, args, NULL);
    Py_DECREF(args);
    return out;
}

/* _show(value) of fields.py; NULL with an error, or NOT_HANDLED for a type it does not cover. */
static PyObject *
show(PyObject *value)
{
    if (PyUnicode_CheckExact(value)) {
        PyObject *r;
        if (PyUnicode_GET_LENGTH(value) <= 40) {
            r = PyObject_Repr(value);
        } else {
            PyObject *head = PyUnicode_Substring(value, 0, 37);
            if (head == NULL)
                return NULL;
            PyObject *cut = PyUnicode_FromFormat("%U...", head);
            Py_DECREF(head);
            if (cut == NULL)
                return NULL;
            r = PyObject_Repr(cut);
            Py_DECREF(cut);
        }
        if (r == NULL)
            return NULL;
        PyObject *out = PyUnicode_FromFormat("string %U", r);
        Py_DECREF(r);
        return out;
    }
    if (value == Py_True)
        return PyUnicode_FromString("true");
    if (value == Py_False)
        return PyUnicode_FromString("false");
    if (value == Py_None)
        return PyUnicode_FromString("null");
    if (PyLong_CheckExact(value) || PyFloat_CheckExact(value))
        return PyUnicode_FromFormat("number %R", value);
    if (PyList_CheckExact(value))
        return PyUnicode_FromString("an array");
    if (PyDict_CheckExact(value))
        return PyUnicode_FromString("an object");
    return NOT_HANDLED;
}

static int
is_space_edge(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n == 0)
        return 0;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    return Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, 0)) ||
           Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, n - 1));
}

/* The integer of a string matching [+-]?[0-9]+(?:\.0+)?\Z (_INTEGRAL_STRING of fields.py), else Py_None
 * (a new reference either way, NULL on error). */
static PyObject *
integral_string(PyObject *s)
{
    if (!PyUnicode_IS_ASCII(s))
        Py_RETURN_NONE; /* every character the pattern accepts is ASCII */
    const char *c = (const char *)PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), i = 0;
    if (i < n && (c[i] == '+' || c[i] == '-'))
        i++;
    Py_ssize_t digits = i;
    while (i < n && c[i] >= '0' && c[i] <= '9')
        i++;
    if (i == digits)
        Py_RETURN_NONE;
    Py_ssize_t end = i;
    if (i < n) {
        if (c[i] != '.')
            Py_RETURN_NONE;
        i++;
        Py_ssize_t zeros = i;
        while (i < n && c[i] == '0')
            i++;
        if (i == zeros || i != n)
            Py_RETURN_NONE;
    }
    PyObject *head = PyUnicode_Substring(s, 0, end);
    if (head == NULL)
        return NULL;
    PyObject *number = PyLong_FromUnicodeObject(head, 10);
    Py_DECREF(head);
    return number;
}

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
    PyObject *c = named(st->spec[S_COERCION], PyTuple_Pack(3, PyTuple_GET_ITEM(st->codes, code), where, message));
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
    PyObject *shown = show(value);
    if (shown == NULL)
        return -1;
    if (shown == NOT_HANDLED)
        return 1;
    PyObject *msg = PyUnicode_FromFormat("%U: expected %U, got %U", where, types_text, shown);
    Py_DECREF(shown);
    return problem(st, RANK_TYPE, CODE_INVALID_FIELD, where, msg);
}

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
        PyObject *quick = PyTuple_GET_ITEM(rule, 2);
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
    if (PyUnicode_CheckExact(v) && st->spec[S_TRIM] == Py_True && is_space_edge(v)) {
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
                PyObject *number = integral_string(v);
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
        PyObject *minimum = PyTuple_GET_ITEM(rule, 2);
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
            PyObject *shown = show(v);
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
        PyObject *low = PyTuple_GET_ITEM(rule, 2), *high = PyTuple_GET_ITEM(rule, 3);
        if (!PyUnicode_CheckExact(v)) {
            if (v == Py_None && PyTuple_GET_ITEM(rule, 4) == Py_True)
                goto keep;
            NEED_WHERE();
            status = type_problem(st, where, PyTuple_GET_ITEM(rule, 6), v);
            if (status < 0)
                goto error;
            goto done;
        }
        if (PyTuple_GET_ITEM(rule, 5) == Py_True && st->spec[S_SEPARATORS] == Py_True &&
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
            status = type_problem(st, where, PyTuple_GET_ITEM(rule, 4), v);
            if (status < 0)
                goto error;
            goto done;
        }
        int in = PySet_Contains(PyTuple_GET_ITEM(rule, 2), v);
        if (in < 0)
            goto error;
        if (!in) {
            NEED_WHERE();
            PyObject *shown = show(v);
            if (shown == NULL)
                goto error;
            PyObject *msg = PyUnicode_FromFormat("%U: %U is not one of %U", where, shown, PyTuple_GET_ITEM(rule, 3));
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
    PyObject *p = named(st->spec[S_PROBLEM], PyTuple_Pack(4, r, code, where, message));
    Py_DECREF(r);
    return p;
}

/* 1 when `path` is an exact str among changed.listed (whose members are the normal changed files, so it is
 * then in `changed`), 0 when that does not say (ChangedFiles.__contains__ decides), -1 on error. */
static int
listed_has(PyObject *changed, PyObject *path)
{
    if (!PyUnicode_CheckExact(path))
        return 0;
    PyObject *listed = PyObject_GetAttrString(changed, "listed");
    if (listed == NULL) {
        PyErr_Clear();
        return 0;
    }
    int found = 0;
    if (PyTuple_CheckExact(listed)) {
        Py_ssize_t len = PyUnicode_GET_LENGTH(path);
        int kind = PyUnicode_KIND(path);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(listed) && !found; i++) {
            PyObject *entry = PyTuple_GET_ITEM(listed, i);
            found = entry == path ||
                    (PyUnicode_CheckExact(entry) && PyUnicode_GET_LENGTH(entry) == len && PyUnicode_KIND(entry) == kind &&
                     memcmp(PyUnicode_DATA(entry), PyUnicode_DATA(path), (size_t)len * kind) == 0);
        }
    }
    Py_DECREF(listed);
    return found;
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
                PyObject *msg = PyUnicode_FromFormat("%U: %S is before line %S", where, ev, lv);
                PyObject *p = msg ? make_problem(st, 0, PyTuple_GET_ITEM(st->codes, CODE_END_BEFORE), where, msg) : NULL;
                Py_DECREF(where);
                Py_XDECREF(msg);
                return p;
            }
        }
        if (PyErr_Occurred())
            return NULL;
    }
    if (path != Py_None) {
        PyObject *pv = PyDict_GetItemWithError(out, path);
        if (pv != NULL) {
            int in = listed_has(changed, pv);
            if (in == 0)
                in = PySequence_Contains(changed, pv);
            if (in < 0)
                return NULL;
            if (!in) {
                PyObject *where = PyUnicode_Concat(st->base, PyTuple_GET_ITEM(PyDict_GetItem(fields, path), 1));
                if (where == NULL)
                    return NULL;
                PyObject *msg = PyUnicode_FromFormat("%U: %R is not a changed file", where, pv);
                PyObject *p =
                    msg ? make_problem(st, 0, PyTuple_GET_ITEM(st->codes, CODE_NOT_CHANGED), where, msg) : NULL;
                Py_DECREF(where);
                Py_XDECREF(msg);
                return p;
            }
        } else if (PyErr_Occurred()) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
check(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
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
    PyObject *result = NULL, *out = NULL, *ordered = NULL;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(required); i++) {
        PyObject *pair = PyTuple_GET_ITEM(required, i);
        int has = PyDict_Contains(item, PyTuple_GET_ITEM(pair, 0));
        if (has < 0)
            return NULL;
        if (!has) {
            PyObject *where = PyUnicode_Concat(st.base, PyTuple_GET_ITEM(pair, 1));
            if (where == NULL)
                return NULL;
            PyObject *msg = PyUnicode_FromFormat("required field %U is missing", where);
            result = msg ? make_problem(&st, 0, PyTuple_GET_ITEM(st.codes, CODE_MISSING), where, msg) : NULL;
            Py_DECREF(where);
            Py_XDECREF(msg);
            return result;
        }
    }
    while (PyDict_Next(item, &pos, &key, &value)) {
        int known = PyDict_Contains(fields, key);
        if (known < 0)
            return NULL;
        if (!known) {
            PyObject *where = PyObject_CallFunctionObjArgs(st.spec[S_MEMBER], st.base, key, NULL);
            if (where == NULL)
                return NULL;
            PyObject *msg = PyUnicode_FromFormat("unknown field %S", where);
            result = msg ? make_problem(&st, 0, PyTuple_GET_ITEM(st.codes, CODE_UNKNOWN), where, msg) : NULL;
            Py_DECREF(where);
            Py_XDECREF(msg);
            return result;
        }
    }
    out = PyDict_New();
    st.applied = PyList_New(0);
    if (out == NULL || st.applied == NULL)
        goto finish;
    pos = 0;
    while (PyDict_Next(item, &pos, &key, &value)) {
        PyObject *kept;
        int status = check_field(&st, PyDict_GetItem(fields, key), value, &kept);
        if (status < 0)
            goto finish;
        if (status > 0) {
            result = Py_None;
            Py_INCREF(result);
            goto finish;
        }
        if (kept != NULL) {
            int r = PyDict_SetItem(out, key, kept);
            Py_DECREF(kept);
            if (r < 0)
                goto finish;
        }
    }
    if (st.rank >= 0) {
        result = make_problem(&st, st.rank, st.code, st.where, st.message);
        goto finish;
    }
    ordered = PyDict_New();
    if (ordered == NULL)
        goto finish;
    pos = 0;
    while (PyDict_Next(fields, &pos, &key, &value)) {
        PyObject *v = PyDict_GetItemWithError(out, key);
        if (v == NULL) {
            if (PyErr_Occurred())
                goto finish;
            continue;
        }
        if (PyDict_SetItem(ordered, key, v) < 0)
            goto finish;
    }
    result = placement(&st, ordered, fields, changed);
    if (result == Py_None) {
        Py_DECREF(result);
        result = PyTuple_Pack(2, ordered, st.applied);
    }
finish:
    Py_XDECREF(out);
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
