package org.apache.clojure_mxnet.bridge;

import java.math.BigInteger;
import java.util.Collection;
import java.util.Map;

import clojure.lang.BigInt;
import clojure.lang.IPersistentMap;
import clojure.lang.ITransientCollection;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;

/**
 * The bridge's one JSON codec, both directions.
 *
 * <p>Reading ({@link #parse}) produces Clojure data: objects become persistent
 * maps with keyword keys, arrays persistent vectors, integers {@code Long}
 * (or {@code BigInteger}), other numbers {@code Double}. It reads what the
 * engine writes (Python's {@code json.dumps}, which may write {@code NaN} and
 * {@code Infinity}), nothing more exotic.
 *
 * <p>Writing ({@link #write}) takes Clojure (or plain Java) data: maps,
 * lists, vectors, sets and other collections, strings, keywords
 * (their name), numbers, booleans and null; map keys are written as their
 * name (keywords) or their string. Anything else is refused with an
 * {@link IllegalArgumentException}.
 */
public final class Json {
    private final String s;
    private int i;

    private Json(String s, int start) {
        this.s = s;
        this.i = start;
    }

    /** Parses the JSON value that starts at {@code start} in {@code s}. */
    public static Object parse(String s, int start) {
        Json p = new Json(s, start);
        Object v = p.value();
        p.ws();
        if (p.i != s.length()) {
            throw p.error("trailing characters");
        }
        return v;
    }

    public static Object parse(String s) {
        return parse(s, 0);
    }

    /** Compact JSON text for {@code x} (see the class comment for what it takes). */
    public static String write(Object x) {
        StringBuilder b = new StringBuilder(64);
        write(b, x);
        return b.toString();
    }

    private static void write(StringBuilder b, Object x) {
        if (x == null) {
            b.append("null");
        } else if (x instanceof String) {
            writeString(b, (String) x);
        } else if (x instanceof Long || x instanceof Integer || x instanceof Short
                || x instanceof Byte) {
            b.append(((Number) x).longValue());
        } else if (x instanceof BigInt || x instanceof BigInteger) {
            b.append(x.toString());
        } else if (x instanceof Number) {
            // Ratios, BigDecimals, floats: as a double (NaN and Infinity as
            // Python's json reads them).
            b.append(((Number) x).doubleValue());
        } else if (x instanceof Boolean) {
            b.append(((Boolean) x) ? "true" : "false");
        } else if (x instanceof Keyword) {
            writeString(b, ((Keyword) x).getName());
        } else if (x instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Object o : ((Map<?, ?>) x).entrySet()) {
                Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
                if (!first) {
                    b.append(',');
                }
                first = false;
                Object k = e.getKey();
                writeString(b, k instanceof Keyword ? ((Keyword) k).getName() : String.valueOf(k));
                b.append(':');
                write(b, e.getValue());
            }
            b.append('}');
        } else if (x instanceof Collection) {
            b.append('[');
            boolean first = true;
            for (Object e : (Collection<?>) x) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                write(b, e);
            }
            b.append(']');
        } else {
            throw new Unwritable(x);
        }
    }

    /** A value {@link #write} cannot send; {@link #value} says which. */
    public static final class Unwritable extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;
        private final transient Object value;

        Unwritable(Object value) {
            super("cannot send a " + value.getClass().getName() + " to the engine");
            this.value = value;
        }

        public Object value() {
            return value;
        }
    }

    private static void writeString(StringBuilder b, String s) {
        b.append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("bad JSON from engine (" + what + ") at " + i + ": "
                + s.substring(Math.max(0, i - 20), Math.min(s.length(), i + 20)));
    }

    private void ws() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                i++;
            } else {
                break;
            }
        }
    }

    private Object value() {
        ws();
        if (i >= s.length()) {
            throw error("unexpected end");
        }
        char c = s.charAt(i);
        switch (c) {
            case '{': return object();
            case '[': return array();
            case '"': return string();
            case 't': expect("true"); return Boolean.TRUE;
            case 'f': expect("false"); return Boolean.FALSE;
            case 'n': expect("null"); return null;
            case 'N': expect("NaN"); return Double.NaN;
            case 'I': expect("Infinity"); return Double.POSITIVE_INFINITY;
            default: return number();
        }
    }

    private void expect(String word) {
        if (!s.startsWith(word, i)) {
            throw error("expected " + word);
        }
        i += word.length();
    }

    private Object number() {
        int start = i;
        boolean real = false;
        if (s.charAt(i) == '-') {
            i++;
            if (s.startsWith("Infinity", i)) {
                i += 8;
                return Double.NEGATIVE_INFINITY;
            }
        }
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c >= '0' && c <= '9') {
                i++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                real = true;
                i++;
            } else {
                break;
            }
        }
        if (start == i) {
            throw error("unexpected character");
        }
        String t = s.substring(start, i);
        if (real) {
            return Double.parseDouble(t);
        }
        try {
            return Long.parseLong(t);
        } catch (NumberFormatException e) {
            return new java.math.BigInteger(t);
        }
    }

    private String string() {
        i++; // opening quote
        StringBuilder b = null;
        int start = i;
        while (true) {
            if (i >= s.length()) {
                throw error("unterminated string");
            }
            char c = s.charAt(i);
            if (c == '"') {
                String out = b == null ? s.substring(start, i) : b.append(s, start, i).toString();
                i++;
                return out;
            }
            if (c == '\\') {
                if (b == null) {
                    b = new StringBuilder();
                }
                b.append(s, start, i);
                char e = s.charAt(i + 1);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u':
                        b.append((char) Integer.parseInt(s.substring(i + 2, i + 6), 16));
                        i += 4;
                        break;
                    default: b.append(e);
                }
                i += 2;
                start = i;
            } else {
                i++;
            }
        }
    }

    private Object array() {
        i++;
        ITransientCollection v = PersistentVector.EMPTY.asTransient();
        ws();
        if (s.charAt(i) == ']') {
            i++;
            return PersistentVector.EMPTY;
        }
        while (true) {
            v = v.conj(value());
            ws();
            char c = s.charAt(i++);
            if (c == ']') {
                return v.persistent();
            }
            if (c != ',') {
                i--;
                throw error("expected , or ]");
            }
        }
    }

    private Object object() {
        i++;
        ITransientCollection m = PersistentArrayMap.EMPTY.asTransient();
        ws();
        if (s.charAt(i) == '}') {
            i++;
            return PersistentArrayMap.EMPTY;
        }
        while (true) {
            ws();
            if (s.charAt(i) != '"') {
                throw error("expected a key");
            }
            String k = string();
            ws();
            if (s.charAt(i++) != ':') {
                i--;
                throw error("expected :");
            }
            Object v = value();
            m = ((clojure.lang.ITransientAssociative) m).assoc(Keyword.intern(k), v);
            ws();
            char c = s.charAt(i++);
            if (c == '}') {
                return (IPersistentMap) m.persistent();
            }
            if (c != ',') {
                i--;
                throw error("expected , or }");
            }
        }
    }
}
