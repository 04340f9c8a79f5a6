/* The usual OpenAI chat completion line read in C: its facts as `fast.shapes.Chat.facts`
 * makes them for a spelled line (`fast.rawtext.SPELLED`; its content may hold `\u` escapes,
 * below) whose sole message is the usual answer (`fast.shapes._sole_answer`) or the usual
 * call (`fast.shapes._sole_call`), without a msgspec Struct or a Python step between the
 * bytes and the facts' constructor.
 *
 * The scan accepts a strict subset of what the `Chat` shape accepts: one object, keys without
 * escapes and each at most once, every key one the shape states, one choice whose message has
 * either a non-empty string content or tool calls (content absent or null), no function call
 * and no refusal (absent or null), integer counts without fraction or exponent of at most 18
 * digits, the id and the model without escapes (the model at most 100 bytes:
 * `formats.text_value` cuts longer ones by characters). Values the shape keeps raw are checked
 * as JSON (strings' escapes among the simple ones but `\/`; a `\u` or `\/` escape, which
 * orjson never writes, makes the line unsure). The content alone may hold `\u` escapes of
 * non-ASCII characters (as Python's `json.dumps` writes them): its answer key is then taken of
 * it respelled as orjson spells it (`respelled`: UTF-8, a surrogate pair joined; a lone
 * surrogate, or an ASCII character's escape, which may spell a think tag, makes the line
 * unsure). Anything else returns None: the caller reads that line by the typed shapes, so
 * every result equals theirs (tests/genledger/fast/test_chatline.py).
 *
 * The caller promises what `fast.rawtext.read_clear` says of the read: the line is valid
 * UTF-8. A line spelling `think>` in any string is refused here (`scan_string`). The
 * counts go through the caller's `settle` (`parse.usage.settle`), a text's answer key
 * through its `key` (`fast.answerkeys.key_of_spelled_bytes`, given a view of the line's
 * string: no copy of the text), the calls' answer through its `calls`
 * (`fast.chatline._call_answer`: the JSON value's bytes, decoded there) and the facts
 * through its constructor (`fast.shapes._CHAT`), or, for rows, into a template row that
 * constructor made: each rule is stated once, in Python (`fast.chatline.CONTEXT`).
 *
 * The same scan reads the chat object one level down (`fast.shapes.Wrapped`, `Batch`: the
 * wrapper's keys checked, its record id and format name taken), and a sibling scan reads
 * SGLang and flat /generate records (`fast.shapes.SGLang`, `Flat`: their id arrays checked
 * and counted, 64 bytes at a time in the usual spelling, their text keyed as a content is),
 * into the facts their own constructors take; the walk makes a row of each record of an
 * SGLang batch line. The context says which kind a call reads (`fast.chatline.KINDS`).
 *
 * No state lives outside a call: the module has no globals.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "_cmodule.h"
#include "_jsoncursor.h"

enum { SURE = 0, UNSURE = -1 }; /* UNSURE: the typed shapes decide the line */
enum { MAX_DEPTH = 64, MAX_DIGITS = 18, MAX_MODEL = 100 };
static const int64_t MILLISECONDS = 100000000000LL; /* formats.MILLISECONDS */

typedef struct {
    const byte *start; /* after the opening quote */
    Py_ssize_t size;   /* up to the closing quote */
    int escaped;       /* holds a backslash */
    int unicode;       /* holds a `\u` escape of a non-ASCII character (`text_string`) */
} Span;

typedef struct {
    int64_t value;
    int given; /* present and not null */
} Count;

/* How many bytes from `p` are neither a quote, a backslash, a control character nor `>`
 * (the end of a think tag), found 16 at a time (texts are most of a line's bytes); the
 * scalar loop after it finishes. */
static inline Py_ssize_t
plain_bytes(const byte *p, const byte *end)
{
    const byte *start = p;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i below = _mm_set1_epi8(0x1f), angle = _mm_set1_epi8('>');
    while (end - p >= 16) {
        __m128i here = _mm_loadu_si128((const __m128i *)p);
        __m128i stop = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(here, quote), _mm_cmpeq_epi8(here, backslash)),
            _mm_or_si128(_mm_cmpeq_epi8(here, angle),
                         _mm_cmpeq_epi8(_mm_min_epu8(here, below), here))); /* <= 0x1f */
        unsigned found = (unsigned)_mm_movemask_epi8(stop);
        if (found)
            return p - start + __builtin_ctz(found);
        p += 16;
    }
#else
    (void)end;
#endif
    return p - start;
}

/* The `\u` escape at `q` (its backslash) of one non-ASCII character: its bytes (6, or 12 for
 * a surrogate pair) and, in `*code`, the character; 0 for any other (an ASCII character's,
 * which may spell a think tag; a lone surrogate; bad hex): then the line is unsure. */
static int
unicode_escape(const byte *q, const byte *end, long *code)
{
    return unicode_escape_from(q, end, 0x80, code);
}

/* Whether `\` then `letter` is one of JSON's two-byte escapes other than `\/` (a switch: a
 * text with a line break every few words has an escape every few dozen bytes). */
static inline int
simple_escape(byte letter)
{
    switch (letter) {
    case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't':
        return 1;
    default:
        return 0;
    }
}

/* A JSON string at the cursor (space before it skipped): its span; the simple escapes are
 * checked, a control character or another escape makes the line unsure: a `\u` escape,
 * unless `unicode` and of a non-ASCII character (`unicode_escape`). So does `think>` (a
 * think tag, maybe a leak: the typed shapes decide), which no string can spell otherwise:
 * its characters' escapes are refused, so a string that decodes to it holds its bytes. */
static int
scan_string(Cursor *c, Span *s, int unicode)
{
    skip_space(c);
    if (c->at >= c->end || *c->at != '"')
        return UNSURE;
    const byte *p = ++c->at;
    s->start = p;
    s->escaped = s->unicode = 0;
    for (;;) {
        const byte *q = p + plain_bytes(p, c->end);
        while (q < c->end && *q != '"' && *q != '\\' && *q >= 0x20 && *q != '>')
            q++;
        if (q >= c->end || *q < 0x20)
            return UNSURE;
        if (*q == '>') {
            if (q - s->start >= 5 && memcmp(q - 5, "think", 5) == 0)
                return UNSURE;
            p = q + 1;
            continue;
        }
        if (*q == '"') {
            s->size = q - s->start;
            c->at = q + 1;
            return SURE;
        }
        s->escaped = 1;
        long code;
        int size = unicode && q + 1 < c->end && q[1] == 'u' ? unicode_escape(q, c->end, &code) : 0;
        if (size) {
            s->unicode = 1;
            p = q + size;
            continue;
        }
        /* not `\/` either: orjson writes `/`, so a text holding it is not spelled (the
         * answer key hashes the bytes), and the native tier also reads respelled reads */
        if (q + 1 >= c->end || !simple_escape(q[1]))
            return UNSURE;
        p = q + 2;
    }
}

/* A JSON string without `\u` escapes (`scan_string`). */
static int
string(Cursor *c, Span *s)
{
    return scan_string(c, s, 0);
}

/* A text: a JSON string whose `\u` escapes of non-ASCII characters `respelled` rewrites. */
static int
text_string(Cursor *c, Span *s)
{
    return scan_string(c, s, 1);
}

static int skip_value(Cursor *c, int depth);

static int
skip_number(Cursor *c)
{
    const byte *p = c->at;
    if (p < c->end && *p == '-')
        p++;
    if (p >= c->end)
        return UNSURE;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    else
        return UNSURE;
    if (p < c->end && *p == '.') {
        const byte *digits = ++p;
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
        if (p == digits)
            return UNSURE;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < c->end && (*p == '+' || *p == '-'))
            p++;
        const byte *digits = p;
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
        if (p == digits)
            return UNSURE;
    }
    c->at = p;
    return SURE;
}

static int
word(Cursor *c, const char *text, Py_ssize_t size)
{
    if (c->end - c->at < size || memcmp(c->at, text, (size_t)size) != 0)
        return UNSURE;
    c->at += size;
    return SURE;
}

/* Whether the next value is `null` (taken) */
static inline int
null_next(Cursor *c)
{
    skip_space(c);
    return word(c, "null", 4) == SURE;
}

/* Any JSON value, checked and skipped (a value the shape keeps raw). */
static int
skip_value(Cursor *c, int depth)
{
    Span s;
    skip_space(c);
    if (c->at >= c->end || depth > MAX_DEPTH)
        return UNSURE;
    switch (*c->at) {
    case '"':
        return string(c, &s);
    case '{':
        c->at++;
        if (take(c, '}'))
            return SURE;
        do {
            if (string(c, &s) || !take(c, ':') || skip_value(c, depth + 1))
                return UNSURE;
        } while (take(c, ','));
        return take(c, '}') ? SURE : UNSURE;
    case '[':
        c->at++;
        if (take(c, ']'))
            return SURE;
        do {
            if (skip_value(c, depth + 1))
                return UNSURE;
        } while (take(c, ','));
        return take(c, ']') ? SURE : UNSURE;
    case 't':
        return word(c, "true", 4);
    case 'f':
        return word(c, "false", 5);
    case 'n':
        return word(c, "null", 4);
    default:
        return skip_number(c);
    }
}

/* An int64 count or null (msgspec's `Int64 | None`): at most 18 digits, no fraction. */
static int
count(Cursor *c, Count *n)
{
    if (null_next(c)) {
        n->given = 0;
        return SURE;
    }
    const byte *p = c->at;
    int negative = p < c->end && *p == '-';
    p += negative;
    const byte *digits = p;
    int64_t value = 0;
    while (p < c->end && *p >= '0' && *p <= '9' && p - digits < MAX_DIGITS)
        value = value * 10 + (*p++ - '0'); /* 18 digits: never beyond int64 */
    Py_ssize_t size = p - digits;
    if (size == 0 || (size > 1 && *digits == '0'))
        return UNSURE;
    /* a 19th digit, a fraction or an exponent: the typed shapes decide */
    if (p < c->end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9')))
        return UNSURE;
    c->at = p;
    n->value = negative ? -value : value;
    n->given = 1;
    return SURE;
}

/* A string or null where the shape types `str | None`, or keeps a text raw. */
static int
text_or_null(Cursor *c)
{
    Span s;
    return null_next(c) ? SURE : string(c, &s);
}

/* The index of key `s` in `names` (each spelled without escapes), -1 if none. */
static int
key_index(const Span *s, const char *const *names)
{
    if (s->escaped)
        return -1;
    if (s->size == 0)
        return -1;
    for (int i = 0; names[i]; i++) /* the first byte decides most misses */
        if (names[i][0] == s->start[0] && (Py_ssize_t)strlen(names[i]) == s->size
            && memcmp(names[i], s->start, (size_t)s->size) == 0)
            return i;
    return -1;
}

/* Walks an object's members: each key looked up in `names` (unknown or repeated: unsure),
 * then `member(c, index, data)` reads its value. */
typedef int (*Member)(Cursor *c, int index, void *data);

static int
members(Cursor *c, const char *const *names, Member member, void *data)
{
    uint64_t seen = 0;
    Span key;
    if (!take(c, '{'))
        return UNSURE;
    if (take(c, '}'))
        return SURE;
    do {
        if (string(c, &key) || !take(c, ':'))
            return UNSURE;
        int index = key_index(&key, names);
        if (index < 0 || (seen >> index) & 1)
            return UNSURE;
        seen |= (uint64_t)1 << index;
        if (member(c, index, data))
            return UNSURE;
    } while (take(c, ','));
    return take(c, '}') ? SURE : UNSURE;
}

/* --- the shape's parts (names as in fast.shapes: the order of each list is its enum's) --- */

typedef struct {
    Count reasoning, cached, write;
} Details;

/* _CompletionDetails and _PromptDetails: every member an int64 or null */
static const char *const COMPLETION_DETAILS[] = {
    "reasoning_tokens", "audio_tokens", "accepted_prediction_tokens",
    "rejected_prediction_tokens", "text_tokens", "image_tokens", NULL};
static const char *const PROMPT_DETAILS[] = {
    "cached_tokens", "cache_write_tokens", "audio_tokens", "text_tokens", "image_tokens",
    "video_tokens", NULL};

static int
completion_detail(Cursor *c, int index, void *data)
{
    Count n;
    if (count(c, &n))
        return UNSURE;
    if (index == 0)
        ((Details *)data)->reasoning = n;
    return SURE;
}

static int
prompt_detail(Cursor *c, int index, void *data)
{
    Count n;
    if (count(c, &n))
        return UNSURE;
    if (index == 0)
        ((Details *)data)->cached = n;
    else if (index == 1)
        ((Details *)data)->write = n;
    return SURE;
}

typedef struct {
    Count prompt, completion, total, reasoning, cached, hit;
    int completion_details, prompt_details; /* present and not null */
    Details details;
} Usage;

enum {
    U_COMPLETION, U_PROMPT, U_TOTAL, U_REASONING, U_COMPLETION_DETAILS, U_PROMPT_DETAILS,
    U_CACHED, U_HIT, U_MISS, U_RAW
};
static const char *const USAGE[] = {
    "completion_tokens", "prompt_tokens", "total_tokens", "reasoning_tokens",
    "completion_tokens_details", "prompt_tokens_details", "cached_tokens",
    "prompt_cache_hit_tokens", "prompt_cache_miss_tokens",
    /* kept raw (read by no declaration) */
    "completion_time", "prompt_time", "queue_time", "total_time", "cost", "cost_details",
    "estimated_cost", "market_cost", "is_byok", "server_tool_use_details",
    "latency_checkpoint", "audio_prompt_tokens", "cache_creation_input_tokens", NULL};

static int
usage_member(Cursor *c, int index, void *data)
{
    Usage *u = data;
    Count miss;
    switch (index) {
    case U_COMPLETION:
        return count(c, &u->completion) || !u->completion.given ? UNSURE : SURE;
    case U_PROMPT:
        return count(c, &u->prompt);
    case U_TOTAL:
        return count(c, &u->total);
    case U_REASONING:
        return count(c, &u->reasoning);
    case U_CACHED:
        return count(c, &u->cached);
    case U_HIT:
        return count(c, &u->hit);
    case U_MISS:
        return count(c, &miss);
    case U_COMPLETION_DETAILS:
        if (null_next(c))
            return SURE;
        u->completion_details = 1;
        return members(c, COMPLETION_DETAILS, completion_detail, &u->details);
    case U_PROMPT_DETAILS:
        if (null_next(c))
            return SURE;
        u->prompt_details = 1;
        return members(c, PROMPT_DETAILS, prompt_detail, &u->details);
    default:
        return skip_value(c, 1);
    }
}

typedef struct {
    Span content, finish, calls;
    int has_content, has_finish, has_message, has_calls;
} Choice;

enum { M_CONTENT, M_ROLE, M_REASONING_CONTENT, M_REASONING, M_REFUSAL, M_TOOL_CALLS,
       M_FUNCTION_CALL, M_RAW };
static const char *const MESSAGE[] = {
    "content", "role", "reasoning_content", "reasoning", "refusal", "tool_calls",
    "function_call",
    /* kept raw */
    "annotations", "audio", "name", "reasoning_details", "provider_metadata", NULL};

static int
message_member(Cursor *c, int index, void *data)
{
    Choice *choice = data;
    switch (index) {
    case M_CONTENT: /* the usual answer: a string other than "" (or null beside calls) */
        if (null_next(c))
            return SURE;
        if (text_string(c, &choice->content) || choice->content.size == 0)
            return UNSURE;
        choice->has_content = 1;
        return SURE;
    case M_ROLE:
    case M_REASONING_CONTENT:
    case M_REASONING:
        return text_or_null(c);
    case M_TOOL_CALLS: /* the usual call: any JSON value, its answer read in Python */
        if (null_next(c))
            return SURE;
        skip_space(c);
        choice->calls.start = c->at;
        if (skip_value(c, 3))
            return UNSURE;
        choice->calls.size = c->at - choice->calls.start;
        choice->has_calls = 1;
        return SURE;
    case M_REFUSAL: /* a refusal, a function call: not the usual answer */
    case M_FUNCTION_CALL:
        return null_next(c) ? SURE : UNSURE;
    default:
        return skip_value(c, 2);
    }
}

enum { C_MESSAGE, C_INDEX, C_FINISH, C_RAW };
static const char *const CHOICE[] = {
    "message", "index", "finish_reason",
    /* kept raw */
    "logprobs", "seed", "stop_reason", "native_finish_reason", "prompt_logprobs",
    "content_filter_results", NULL};

static int
choice_member(Cursor *c, int index, void *data)
{
    Choice *choice = data;
    Count n;
    switch (index) {
    case C_MESSAGE:
        choice->has_message = 1;
        return members(c, MESSAGE, message_member, choice);
    case C_INDEX:
        return count(c, &n);
    case C_FINISH: /* a string without escapes, or null (an object: the typed shapes) */
        if (null_next(c))
            return SURE;
        choice->has_finish = 1;
        return string(c, &choice->finish) || choice->finish.escaped ? UNSURE : SURE;
    default:
        return skip_value(c, 2);
    }
}

typedef struct {
    Span id, object, model;
    Count created;
    int has_id, has_object, has_model, has_usage, choices;
    Choice choice;
    Usage usage;
    /* the line around the chat object (`fast.shapes.Wrapped`, `fast.shapes.Batch`): the
     * outer id, the Batch line's custom id, its status, and which one names the record */
    Span outer_id, custom_id;
    Count status;
    int has_outer_id, has_custom_id, has_body, has_response;
    const Span *key; /* the record id's span, or NULL: none */
} Record;

enum { R_USAGE, R_CHOICES, R_ID, R_OBJECT, R_CREATED, R_MODEL, R_FINGERPRINT, R_TIER, R_RAW };
static const char *const RECORD[] = {
    "usage", "choices", "id", "object", "created", "model", "system_fingerprint",
    "service_tier",
    /* kept raw */
    "usage_breakdown", "provider", "moderation", "prompt", "kv_transfer_params",
    "prompt_logprobs", "prompt_filter_results", "citations", "generationId", "time_info",
    "request_id", NULL};

/* A string without escapes, or null (`has` says which). */
static int
plain_text(Cursor *c, Span *s, int *has)
{
    if (null_next(c))
        return SURE;
    *has = 1;
    return string(c, s) || s->escaped ? UNSURE : SURE;
}

static int
record_member(Cursor *c, int index, void *data)
{
    Record *r = data;
    switch (index) {
    case R_USAGE:
        r->has_usage = 1;
        return members(c, USAGE, usage_member, &r->usage);
    case R_CHOICES: /* exactly one choice */
        if (!take(c, '[') || members(c, CHOICE, choice_member, &r->choice) || !take(c, ']'))
            return UNSURE;
        r->choices = 1;
        return SURE;
    case R_ID:
        r->has_id = 1;
        return string(c, &r->id) || r->id.escaped ? UNSURE : SURE;
    case R_OBJECT:
        return plain_text(c, &r->object, &r->has_object);
    case R_CREATED:
        return count(c, &r->created);
    case R_MODEL:
        return plain_text(c, &r->model, &r->has_model);
    case R_FINGERPRINT:
    case R_TIER:
        return text_or_null(c);
    default:
        return skip_value(c, 1);
    }
}

/* --- the lines around a chat object ------------------------------------------------------- */

/* The kinds of line, as `fast.chatline.KINDS` numbers them. */
enum { K_CHAT, K_WRAPPED, K_BATCH, K_SGLANG, K_FLAT, K_KINDS };

/* fast.shapes.Wrapped: `{"response": {chat}, "id": str}` */
enum { W_RESPONSE, W_ID };
static const char *const WRAPPED[] = {"response", "id", NULL};

static int
wrapped_member(Cursor *c, int index, void *data)
{
    Record *r = data;
    if (index == W_RESPONSE) {
        r->has_response = 1;
        return members(c, RECORD, record_member, r);
    }
    r->has_outer_id = 1;
    return string(c, &r->outer_id) || r->outer_id.escaped ? UNSURE : SURE;
}

/* fast.shapes._BatchResponse: `{"body": {chat}, "status_code": int64, "request_id": str|null}` */
enum { B_BODY, B_STATUS, B_REQUEST };
static const char *const BATCH_RESPONSE[] = {"body", "status_code", "request_id", NULL};

static int
batch_response_member(Cursor *c, int index, void *data)
{
    Record *r = data;
    switch (index) {
    case B_BODY:
        r->has_body = 1;
        return members(c, RECORD, record_member, r);
    case B_STATUS: /* an int64, never null (a missing one is 200) */
        return count(c, &r->status) || !r->status.given ? UNSURE : SURE;
    default:
        return text_or_null(c);
    }
}

/* fast.shapes.Batch: `{"response": {...}, "custom_id": str, "id": str, "error": null}` */
enum { BL_RESPONSE, BL_CUSTOM, BL_ID, BL_ERROR };
static const char *const BATCH[] = {"response", "custom_id", "id", "error", NULL};

static int
batch_member(Cursor *c, int index, void *data)
{
    Record *r = data;
    switch (index) {
    case BL_RESPONSE:
        r->has_response = 1;
        return members(c, BATCH_RESPONSE, batch_response_member, r);
    case BL_CUSTOM:
        r->has_custom_id = 1;
        return string(c, &r->custom_id) || r->custom_id.escaped ? UNSURE : SURE;
    case BL_ID:
        r->has_outer_id = 1;
        return string(c, &r->outer_id) || r->outer_id.escaped ? UNSURE : SURE;
    default: /* only a null error: a failed request is the general path's */
        return null_next(c) ? SURE : UNSURE;
    }
}

static inline int
spelled(const Span *s, const char *text)
{
    return (Py_ssize_t)strlen(text) == s->size && memcmp(text, s->start, (size_t)s->size) == 0;
}

/* --- SGLang /generate and flat records (`fast.shapes.SGLang`, `fast.shapes.Flat`) -------- */

typedef struct {
    Span text, id, finish;
    Count prompt, completion, reasoning, cached;
    Py_ssize_t output_len, input_len; /* -1: absent */
    int has_text, has_id, has_finish, has_meta;
} Generated;

/* The rules of the usual id array's bytes, 64 at a time: only digits, commas and spaces;
 * a comma after a digit, a space after a comma, no digit after a leading `0`, digit runs of
 * at most 18 (`run`: the digits before the block); the classes of the block's last two
 * bytes carried to the next. */
typedef struct {
    uint64_t digit, comma, zero; /* bit 0: the byte before the block; bit 1: the one before */
    int run;
    Py_ssize_t commas;
} IdRules;

/* The set bits of a word (SWAR: `popcnt` is not in x86-64's baseline). */
static inline int
ones(uint64_t x)
{
    x = x - (x >> 1 & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + (x >> 2 & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

/* Checks the first `valid` bytes of a block (their class masks given); 0 when one breaks a
 * rule. */
static inline int
id_block(IdRules *k, uint64_t d, uint64_t c, uint64_t z, uint64_t s, int valid)
{
    uint64_t keep = valid == 64 ? ~0ULL : (1ULL << valid) - 1;
    d &= keep, c &= keep, z &= keep, s &= keep;
    uint64_t before_d = (d << 1 | (k->digit & 1)) & keep;
    uint64_t before_c = (c << 1 | (k->comma & 1)) & keep;
    uint64_t before_z = (z << 1 | (k->zero & 1)) & keep;
    uint64_t two_before_d = (d << 2 | (k->digit >> 1 & 1) | (k->digit & 1) << 1) & keep;
    if ((c & ~before_d) | (s & ~before_c) | (d & before_z & ~two_before_d))
        return 0;
    uint64_t other = ~d & keep; /* the bytes that end a digit run */
    if (!other) {
        k->run += valid;
    } else {
        if (k->run + __builtin_ctzll(other) > MAX_DIGITS)
            return 0;
        k->run = valid - 1 - (63 - __builtin_clzll(other));
    }
    /* a run of 19 digits inside the block: 19 digit bits in a row */
    uint64_t runs = d;
    for (int shift = 1; shift <= 8; shift <<= 1)
        runs &= runs >> shift;
    /* `runs` now marks where 16 (1+1+2+4+8) digits start; the 3 after them complete 19 */
    runs &= d >> 16 & d >> 17 & d >> 18;
    if (runs || k->run > MAX_DIGITS)
        return 0;
    k->commas += ones(c);
    unsigned last = (unsigned)valid - 1;
    k->digit = (d >> last & 1) | (valid > 1 ? (d >> (last - 1) & 1) << 1 : (k->digit & 1) << 1);
    k->comma = c >> last & 1;
    k->zero = z >> last & 1;
    return 1;
}

#if defined(__SSE2__)
/* The class masks of the 16 bytes at `p`, or'ed in at bit `shift`. */
static inline void
id_classes(const byte *p, int shift, uint64_t *d, uint64_t *c, uint64_t *z, uint64_t *s)
{
    __m128i here = _mm_loadu_si128((const __m128i *)p);
    /* digits: '0'..'9', a signed range after the offset */
    __m128i shifted = _mm_xor_si128(_mm_sub_epi8(here, _mm_set1_epi8('0')),
                                    _mm_set1_epi8((char)0x80));
    __m128i digits = _mm_cmplt_epi8(shifted, _mm_set1_epi8((char)(0x80 + 10)));
    *d |= (uint64_t)(unsigned)_mm_movemask_epi8(digits) << shift;
    *c |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(here, _mm_set1_epi8(','))) << shift;
    *z |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(here, _mm_set1_epi8('0'))) << shift;
    *s |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(here, _mm_set1_epi8(' '))) << shift;
}
#endif

/* The usual id array at `c->at` (its `[`: integers of at most 18 digits, no sign, spelled
 * `,` or `, ` apart, as orjson and `json.dumps` write them), checked and counted 64 bytes at
 * a time: 1 with its length in `*n`, the cursor past it; 0 for any other spelling (the exact
 * scan then decides). */
static int
quick_id_array(Cursor *c, Py_ssize_t *n)
{
#if defined(__SSE2__)
    const byte *p = c->at + 1;
    IdRules k = {0, 0, 0, 0, 0};
    for (;;) {
        byte tail[64];
        const byte *block = p;
        int size = 64;
        if (c->end - p < 64) { /* the line's last bytes, padded with a byte of no class */
            size = (int)(c->end - p);
            memset(tail, 'x', sizeof tail);
            memcpy(tail, p, (size_t)size);
            block = tail;
        }
        uint64_t d = 0, cm = 0, z = 0, s = 0;
        for (int i = 0; i < 4; i++)
            id_classes(block + 16 * i, 16 * i, &d, &cm, &z, &s);
        uint64_t known = d | cm | s;
        int valid = ~known ? __builtin_ctzll(~known) : 64;
        if (valid > size)
            valid = size;
        if (valid && !id_block(&k, d, cm, z, s, valid))
            return 0;
        if (valid == 64) {
            p += 64;
            continue;
        }
        /* the array ends here: `]` after a digit (the body's first byte is one, by the rules) */
        if (valid >= size || block[valid] != ']' || !(k.digit & 1) || p + valid == c->at + 1)
            return 0;
        *n = k.commas + 1;
        c->at = p + valid + 1;
        return 1;
    }
#else
    (void)c;
    (void)n;
    return 0;
#endif
}

/* An id array as `shapes._ids_len` counts it (`shapes.flat_len`): only integers of at most
 * 18 digits and nulls are taken here, its length in `*n`; anything else (a lifted array's
 * stand-in, a fraction, an inner array, null for the array) is unsure. The usual spelling is
 * read 16 bytes at a time (`quick_id_array`), any other byte by byte. */
static int
id_array(Cursor *c, Py_ssize_t *n)
{
    *n = 0;
    skip_space(c);
    if (c->at < c->end && *c->at == '[' && quick_id_array(c, n))
        return SURE;
    if (!take(c, '['))
        return UNSURE;
    if (take(c, ']'))
        return SURE;
    do {
        skip_space(c);
        const byte *p = c->at;
        if (p < c->end && *p == 'n') {
            if (word(c, "null", 4))
                return UNSURE;
        } else {
            p += p < c->end && *p == '-';
            const byte *digits = p;
            while (p < c->end && *p >= '0' && *p <= '9')
                p++;
            if (p == digits || p - digits > MAX_DIGITS || (p - digits > 1 && *digits == '0'))
                return UNSURE;
            c->at = p;
        }
        (*n)++;
    } while (take(c, ','));
    return take(c, ']') ? SURE : UNSURE;
}

/* fast.shapes._FinishObject: `{"type": str, "matched": int64|str|null, "length": int64|null,
 * "message": str|null}`, its `type` the reason (`shapes._reason`). */
enum { F_TYPE, F_MATCHED, F_LENGTH, F_MESSAGE };
static const char *const FINISH_OBJECT[] = {"type", "matched", "length", "message", NULL};

static int
finish_member(Cursor *c, int index, void *data)
{
    Generated *g = data;
    Count n;
    switch (index) {
    case F_TYPE:
        g->has_finish = 1;
        return string(c, &g->finish) || g->finish.escaped ? UNSURE : SURE;
    case F_MATCHED:
        skip_space(c);
        if (c->at < c->end && *c->at == '"')
            return text_or_null(c);
        return count(c, &n);
    case F_LENGTH:
        return count(c, &n);
    default:
        return text_or_null(c);
    }
}

/* A finish reason (`shapes.Finish`): a string without escapes, an object, or null. */
static int
finish_reason(Cursor *c, Generated *g)
{
    if (null_next(c))
        return SURE;
    if (c->at < c->end && *c->at == '{')
        return members(c, FINISH_OBJECT, finish_member, g) || !g->has_finish ? UNSURE : SURE;
    g->has_finish = 1;
    return string(c, &g->finish) || g->finish.escaped ? UNSURE : SURE;
}

/* A number or null where the shape types `float | None`: no exponent, at most 18 digits
 * before any fraction (msgspec takes every such number as a float). */
static int
real_or_null(Cursor *c)
{
    if (null_next(c))
        return SURE;
    const byte *p = c->at;
    p += p < c->end && *p == '-';
    const byte *digits = p;
    while (p < c->end && *p >= '0' && *p <= '9')
        p++;
    if (p == digits || p - digits > MAX_DIGITS || (p - digits > 1 && *digits == '0'))
        return UNSURE;
    if (p < c->end && *p == '.') {
        const byte *fraction = ++p;
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
        if (p == fraction)
            return UNSURE;
    }
    if (p < c->end && (*p == 'e' || *p == 'E'))
        return UNSURE;
    c->at = p;
    return SURE;
}

/* A text (`shapes.Text`: a string or null); `has` says a string. */
static int
raw_text(Cursor *c, Span *s, int *has)
{
    if (null_next(c))
        return SURE;
    *has = 1;
    return text_string(c, s);
}

/* fast.shapes._SGLangMeta */
enum {
    S_COMPLETION, S_ID, S_PROMPT, S_FINISH, S_WEIGHT, S_REASONING, S_CACHED, S_CACHED_DETAILS,
    S_LATENCY
};
static const char *const SGLANG_META[] = {
    "completion_tokens", "id", "prompt_tokens", "finish_reason", "weight_version",
    "reasoning_tokens", "cached_tokens", "cached_tokens_details", "e2e_latency", NULL};

static int
meta_member(Cursor *c, int index, void *data)
{
    Generated *g = data;
    switch (index) {
    case S_COMPLETION: /* required, never null */
        return count(c, &g->completion) || !g->completion.given ? UNSURE : SURE;
    case S_ID:
        g->has_id = 1;
        return string(c, &g->id) || g->id.escaped ? UNSURE : SURE;
    case S_PROMPT:
        return count(c, &g->prompt);
    case S_FINISH:
        return finish_reason(c, g);
    case S_WEIGHT:
        return text_or_null(c);
    case S_REASONING:
        return count(c, &g->reasoning);
    case S_CACHED:
        return count(c, &g->cached);
    case S_CACHED_DETAILS:
        return null_next(c) ? SURE : UNSURE;
    default:
        return real_or_null(c);
    }
}

/* fast.shapes.SGLang: `{"meta_info": {...}, "text": Text, "output_ids": [...]}` */
enum { SG_META, SG_TEXT, SG_OUTPUT };
static const char *const SGLANG[] = {"meta_info", "text", "output_ids", NULL};

static int
sglang_member(Cursor *c, int index, void *data)
{
    Generated *g = data;
    switch (index) {
    case SG_META:
        g->has_meta = 1;
        return members(c, SGLANG_META, meta_member, g);
    case SG_TEXT:
        return raw_text(c, &g->text, &g->has_text);
    default:
        return id_array(c, &g->output_len);
    }
}

/* fast.shapes.Flat */
enum { FL_ID, FL_REQUEST, FL_TEXT, FL_INPUT, FL_OUTPUT, FL_PROMPT, FL_COMPLETION, FL_FINISH };
static const char *const FLAT[] = {
    "id", "request_id", "text", "input_ids", "output_ids", "prompt_tokens",
    "completion_tokens", "finish_reason", NULL};

static int
flat_member(Cursor *c, int index, void *data)
{
    Generated *g = data;
    switch (index) {
    case FL_ID:
        g->has_id = 1;
        return string(c, &g->id) || g->id.escaped ? UNSURE : SURE;
    case FL_REQUEST:
        return text_or_null(c);
    case FL_TEXT:
        return raw_text(c, &g->text, &g->has_text);
    case FL_INPUT:
        return id_array(c, &g->input_len);
    case FL_OUTPUT:
        return id_array(c, &g->output_len);
    case FL_PROMPT:
        return count(c, &g->prompt);
    case FL_COMPLETION:
        return count(c, &g->completion);
    default:
        return finish_reason(c, g);
    }
}

/* Scans one SGLang or flat record (`kind`) at the cursor, leaving it after the record; SURE
 * and `g` filled when the shape holds it and the facts follow as its `facts` writes them (a
 * failed SGLang request, a flat record with no count at all: unsure). */
static int
generated_object(Cursor *c, Generated *g, int kind)
{
    memset(g, 0, sizeof *g);
    g->output_len = g->input_len = -1;
    if (members(c, kind == K_SGLANG ? SGLANG : FLAT,
                kind == K_SGLANG ? sglang_member : flat_member, g))
        return UNSURE;
    if (kind == K_SGLANG)
        return g->has_meta && g->completion.given /* required */
                       && !(g->has_finish && spelled(&g->finish, "abort"))
                   ? SURE
                   : UNSURE;
    return g->completion.given || g->output_len >= 0 ? SURE : UNSURE;
}

/* Scans one SGLang or flat line (`kind`): one record (`generated_object`), nothing after. */
static int
scan_generated(const byte *data, Py_ssize_t size, Generated *g, int kind)
{
    Cursor c = {data, data + size};
    if (size == 0 || data[0] != '{' || generated_object(&c, g, kind))
        return UNSURE;
    skip_space(&c);
    return c.at == c.end ? SURE : UNSURE;
}

/* --- the facts --------------------------------------------------------------------------- */

static PyObject *
count_object(const Count *n)
{
    if (!n->given)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(n->value);
}

static PyObject *
text_object(const Span *s, int has)
{
    if (!has || s->size == 0) /* formats.text_value: "" is no text; `id or None` likewise */
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8((const char *)s->start, s->size, NULL);
}

/* The texts the facts hold (id, finish reason, model) as str; 0 when one is not valid
 * UTF-8 (the caller promised it is: the line is then left to the typed shapes, which
 * decide), -1 on another error. */
static int
texts_of(const Record *r, PyObject **texts)
{
    const Span none = {NULL, 0, 0, 0};
    const Span *spans[3] = {r->key ? r->key : &none, &r->choice.finish, &r->model};
    int has[3] = {r->key != NULL, r->choice.has_finish, r->has_model};
    for (int i = 0; i < 3; i++) {
        if (i == 1 && has[i] && spans[i]->size == 0) /* "" is a finish reason, not none */
            texts[i] = PyUnicode_FromStringAndSize("", 0);
        else
            texts[i] = text_object(spans[i], has[i]);
        if (texts[i])
            continue;
        for (int j = 0; j < i; j++)
            Py_CLEAR(texts[j]);
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* formats.time_value of an int: epoch seconds, or milliseconds above MILLISECONDS */
static PyObject *
time_object(const Count *n)
{
    if (!n->given)
        Py_RETURN_NONE;
    int64_t v = n->value;
    if (v > -MILLISECONDS && v < MILLISECONDS)
        return PyLong_FromLongLong(v);
    return PyLong_FromLongLong(v >= 0 ? v / 1000 : -((-v + 999) / 1000));
}

/* The context's items (`fast.chatline.CONTEXT`). */
enum {
    X_MAKER, X_SETTLE, X_KEY, X_CHAT, X_COMPLETION, X_CALLS, X_TEMPLATE, X_PLACES, X_KIND,
    X_SIZE
};
enum { FACTS = 18, MAX_ROW = 64 }; /* the facts the constructor takes; a row's most columns */

/* A text (`text_string`) as orjson spells it, quotes included: each `\u` escape of a
 * non-ASCII character its UTF-8 bytes (a surrogate pair joined), every other escape as it
 * is (the simple ones, which orjson writes alike). */
static PyObject *
respelled(const Span *text)
{
    const byte *p = text->start, *end = p + text->size;
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, text->size + 2); /* never longer */
    if (!bytes)
        return NULL;
    byte *out = (byte *)PyBytes_AS_STRING(bytes), *to = out;
    *to++ = '"';
    while (p < end) {
        long code;
        int size = p[0] == '\\' && p[1] == 'u' ? unicode_escape(p, end, &code) : 0;
        if (!size) {
            /* a plain byte, or a simple escape's two (so an escaped backslash stays one) */
            int n = p[0] == '\\' ? 2 : 1;
            memcpy(to, p, n);
            to += n;
            p += n;
            continue;
        }
        if (code < 0x800) {
            *to++ = (byte)(0xC0 | code >> 6);
        } else if (code < 0x10000) {
            *to++ = (byte)(0xE0 | code >> 12);
            *to++ = (byte)(0x80 | (code >> 6 & 0x3F));
        } else {
            *to++ = (byte)(0xF0 | code >> 18);
            *to++ = (byte)(0x80 | (code >> 12 & 0x3F));
            *to++ = (byte)(0x80 | (code >> 6 & 0x3F));
        }
        *to++ = (byte)(0x80 | (code & 0x3F));
        p += size;
    }
    *to++ = '"';
    if (_PyBytes_Resize(&bytes, to - out) < 0)
        return NULL;
    return bytes;
}

/* `fast.answerkeys.key_of_spelled_bytes` of a content's bytes: the caller's `key` over a view
 * of the string in the line, quotes included (`_collapse.spelled_key`: no copy of the text, no
 * pass to find what it holds before the collapse, the hash over the view where nothing
 * collapses); a text with `\u` escapes respelled first. The view lives for the call only:
 * the key is an int or None, and the line outlives it. */
static PyObject *
text_key(PyObject *context, const Span *content)
{
    PyObject *data = content->unicode
                         ? respelled(content)
                         : PyMemoryView_FromMemory((char *)content->start - 1, content->size + 2,
                                                   PyBUF_READ);
    PyObject *key = data ? PyObject_CallOneArg(PyTuple_GET_ITEM(context, X_KEY), data) : NULL;
    Py_XDECREF(data);
    return key;
}

/* The facts of a scanned record, as `_chat_facts` writes them for a sole usual answer, in
 * the order the facts' constructor takes them: 1 and `args` filled (new references), 0 when
 * a text is not valid UTF-8 or the calls' answer says None (the typed shapes decide that
 * line), -1 on an error. */
static int
values_of(const Record *r, PyObject *context, PyObject **args)
{
    const Usage *u = &r->usage;
    const Details *d = &u->details;
    Count none = {0, 0};
    /* `completion_tokens_details.reasoning_tokens`, else the usage's own */
    Count reasoning = u->completion_details && d->reasoning.given ? d->reasoning : u->reasoning;
    /* Usage.cached: the details', the HF router's, DeepSeek's, first present */
    Count cached = u->prompt_details && d->cached.given ? d->cached
                   : u->cached.given                    ? u->cached
                                                        : u->hit;
    Count write = u->prompt_details ? d->write : none;
    int completion = r->has_object && spelled(&r->object, "text_completion");

    PyObject *counts[6] = {NULL};
    const Count *given[6] = {&u->prompt, &u->completion, &u->total, &reasoning, &cached, &write};
    PyObject *settled = NULL, *answer = NULL, *text = NULL, *pair = NULL, *texts[3] = {NULL};
    PyObject *empty = Py_False; /* a text answer shows: no empty output */
    int made = 0, status = -1; /* args[0 .. made) are owned */
    int valid = texts_of(r, texts);
    if (valid <= 0)
        return valid;
    if (r->choice.has_calls) { /* (answer key, empty output) of the calls, or None */
        text = PyBytes_FromStringAndSize((const char *)r->choice.calls.start,
                                         r->choice.calls.size);
        if (!text || !(pair = PyObject_CallOneArg(PyTuple_GET_ITEM(context, X_CALLS), text)))
            goto done;
        if (pair == Py_None) {
            status = 0;
            goto done;
        }
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "the calls' answer must be (key, empty)");
            goto done;
        }
        answer = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
        empty = PyTuple_GET_ITEM(pair, 1);
    } else if (!(answer = text_key(context, &r->choice.content)))
        goto done;
    for (int i = 0; i < 6; i++)
        if (!(counts[i] = count_object(given[i])))
            goto done;
    settled = PyObject_Vectorcall(PyTuple_GET_ITEM(context, X_SETTLE), counts, 6, NULL);
    if (!settled)
        goto done;
    if (!PyTuple_Check(settled) || PyTuple_GET_SIZE(settled) != 6) {
        PyErr_SetString(PyExc_TypeError, "settle must return 6 facts");
        goto done;
    }
    args[made++] = Py_NewRef(texts[0]);
    args[made++] = Py_NewRef(PyTuple_GET_ITEM(context, completion ? X_COMPLETION : X_CHAT));
    for (int i = 0; i < 6; i++)
        args[made++] = Py_NewRef(PyTuple_GET_ITEM(settled, i));
    args[made++] = Py_NewRef(counts[4]);      /* cached */
    args[made++] = Py_NewRef(counts[5]);      /* write */
    args[made++] = Py_NewRef(counts[2]);      /* total */
    if (!(args[made++] = PyLong_FromLong(1))) /* n_samples: one choice */
        goto done;
    args[made++] = Py_NewRef(texts[1]);
    args[made++] = Py_NewRef(Py_None); /* more finishes */
    args[made++] = Py_NewRef(texts[2]);
    if (!(args[made++] = time_object(&r->created)))
        goto done;
    args[made++] = Py_NewRef(answer);
    args[made++] = Py_NewRef(empty);
    status = 1;
done:
    if (status != 1)
        for (int i = 0; i < made; i++)
            Py_XDECREF(args[i]);
    for (int i = 0; i < 6; i++)
        Py_XDECREF(counts[i]);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(texts[i]);
    Py_XDECREF(settled);
    Py_XDECREF(answer);
    Py_XDECREF(text);
    Py_XDECREF(pair);
    return status;
}

enum { GENERATED_FACTS = 12 }; /* the facts `shapes._SGLANG` and `shapes._FLAT` take */

/* A str of a span without escapes (`has`: else None; `empty`: "" is None, as `id or None`);
 * NULL with UnicodeDecodeError set when it is not valid UTF-8. */
static PyObject *
plain_object(const Span *s, int has, int empty)
{
    if (!has || (s->size == 0 && empty))
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8((const char *)s->start, s->size, NULL);
}

/* The facts of a scanned SGLang or flat record, in the order its constructor takes them
 * (`SGLang.facts`, `Flat.facts`): 1 and `args` filled (new references), 0 when a text is not
 * valid UTF-8, -1 on an error. */
static int
generated_values(const Generated *g, int kind, PyObject *context, PyObject **args)
{
    PyObject *id = NULL, *finish = NULL, *answer = NULL, *settled = NULL, *length = NULL;
    PyObject *counts[6] = {NULL};
    int made = 0, status = -1, flat = kind == K_FLAT, derived = flat && !g->completion.given;
    Count none = {0, 0};
    Count input = {g->input_len, g->input_len >= 0}, output = {g->output_len, g->output_len >= 0};
    /* SGLang: (prompt, completion, -, reasoning, cached); flat: (prompt, count, -); derived:
     * the count and the prompt are the id arrays' lengths */
    const Count *given[6] = {
        derived ? &input : &g->prompt, derived ? &output : &g->completion, &none,
        flat ? &none : &g->reasoning, flat ? &none : &g->cached, &none};
    if (!(id = plain_object(&g->id, g->has_id, 1))
        || !(finish = plain_object(&g->finish, g->has_finish, 0))) {
        status = PyErr_ExceptionMatches(PyExc_UnicodeDecodeError) ? 0 : -1;
        if (!status)
            PyErr_Clear();
        goto done;
    }
    if (g->has_text)
        answer = text_key(context, &g->text);
    else
        answer = Py_NewRef(Py_None);
    if (!answer || !(length = count_object(&output)))
        goto done;
    for (int i = 0; i < 6; i++)
        if (!(counts[i] = count_object(given[i])))
            goto done;
    settled = PyObject_Vectorcall(PyTuple_GET_ITEM(context, X_SETTLE), counts, 6, NULL);
    if (!settled)
        goto done;
    if (!PyTuple_Check(settled) || PyTuple_GET_SIZE(settled) != 6) {
        PyErr_SetString(PyExc_TypeError, "settle must return 6 facts");
        goto done;
    }
    args[made++] = Py_NewRef(id);
    if (flat)
        args[made++] = Py_NewRef(PyTuple_GET_ITEM(context, derived ? X_COMPLETION : X_CHAT));
    for (int i = 0; i < 6; i++)
        args[made++] = Py_NewRef(PyTuple_GET_ITEM(settled, i));
    if (!flat)
        args[made++] = Py_NewRef(counts[4]); /* cached */
    args[made++] = Py_NewRef(finish);
    args[made++] = Py_NewRef(length);
    args[made++] = Py_NewRef(g->has_text && g->text.size == 0 ? Py_True : Py_False);
    args[made++] = Py_NewRef(answer);
    status = 1;
done:
    for (int i = 0; i < 6; i++)
        Py_XDECREF(counts[i]);
    Py_XDECREF(id);
    Py_XDECREF(finish);
    Py_XDECREF(answer);
    Py_XDECREF(settled);
    Py_XDECREF(length);
    return status;
}

static int scan(const byte *data, Py_ssize_t size, Record *r, int kind);

/* The facts of one line of `kind` (`args`, `*n` of them, new references): 1; 0 when the scan
 * is unsure; -1 on an error. `walk`: a text completion, a closer of streams, is the caller's. */
static int
line_values(const byte *data, Py_ssize_t size, int kind, PyObject *context, int walk,
            PyObject **args, int *n)
{
    if (kind >= K_SGLANG) {
        Generated g;
        if (scan_generated(data, size, &g, kind))
            return 0;
        *n = GENERATED_FACTS;
        return generated_values(&g, kind, context, args);
    }
    Record r;
    if (scan(data, size, &r, kind) || (walk && r.has_object && spelled(&r.object, "text_completion")))
        return 0;
    *n = FACTS;
    return values_of(&r, context, args);
}

/* Scans the line around the chat object (`kind`) and says which span names the record:
 * the chat's id (`Chat.facts`), the wrapper's (`Wrapped.facts`), the Batch line's custom
 * id, else its id (`Batch.facts`); SURE when the wrapper is the usual one. */
static int
scan_kind(Cursor *c, Record *r, int kind)
{
    switch (kind) {
    case K_CHAT:
        if (members(c, RECORD, record_member, r))
            return UNSURE;
        r->key = r->has_id ? &r->id : NULL;
        return SURE;
    case K_WRAPPED:
        if (members(c, WRAPPED, wrapped_member, r) || !r->has_response)
            return UNSURE;
        r->key = r->has_outer_id ? &r->outer_id : NULL;
        return SURE;
    default:
        if (members(c, BATCH, batch_member, r) || !r->has_response || !r->has_body)
            return UNSURE;
        if (r->status.given && r->status.value != 200)
            return UNSURE; /* a failed request */
        r->key = r->has_custom_id && r->custom_id.size ? &r->custom_id
                 : r->has_outer_id                     ? &r->outer_id
                                                       : NULL;
        return SURE;
    }
}

/* Scans one line of `kind`; SURE and `r` filled when it is the usual record. */
static int
scan(const byte *data, Py_ssize_t size, Record *r, int kind)
{
    Cursor c = {data, data + size};
    memset(r, 0, sizeof *r);
    if (size == 0 || data[0] != '{') /* as the typed tier: space or a BOM first is not its */
        return UNSURE;
    if (scan_kind(&c, r, kind))
        return UNSURE;
    skip_space(&c);
    if (c.at != c.end || !r->has_usage || !r->usage.completion.given || !r->choices
        || !r->choice.has_message || r->choice.has_content == r->choice.has_calls)
        return UNSURE;
    if (r->has_object && spelled(&r->object, "chat.completion.chunk"))
        return UNSURE; /* a stream's last chunk: the general path */
    if (r->has_model && r->model.size > MAX_MODEL)
        return UNSURE; /* text_value cuts by characters */
    return SURE;
}

/* The context's kind of line (`K_CHAT`, ...), -1 with an error set if it is none. */
static int
kind_of(PyObject *context)
{
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(context, X_KIND));
    if (kind >= 0 && kind < K_KINDS)
        return (int)kind;
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "chatline: an unknown kind of line");
    return -1;
}

static PyObject *
chat_facts(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2 || !PyBytes_Check(args[1]) || !PyTuple_Check(args[0])
        || PyTuple_GET_SIZE(args[0]) != X_SIZE) {
        PyErr_SetString(PyExc_TypeError,
                        "chat_facts(context, line: bytes)");
        return NULL;
    }
    int kind = kind_of(args[0]);
    if (kind < 0)
        return NULL;
    PyObject *values[FACTS];
    int n = 0, status = line_values((const byte *)PyBytes_AS_STRING(args[1]),
                                    PyBytes_GET_SIZE(args[1]), kind, args[0], 0, values, &n);
    if (status <= 0)
        return status < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *facts = PyObject_Vectorcall(PyTuple_GET_ITEM(args[0], X_MAKER), values, n, NULL);
    for (int i = 0; i < n; i++)
        Py_DECREF(values[i]);
    return facts;
}

/* A row of the token table as `TableBuilder.add` makes it: the context's template row (the
 * constructor's constants and every other fact's default) with the position columns and the
 * facts `args` (new references, taken) at their places. */
static PyObject *
row_of(PyObject *template, const Py_ssize_t *places, int n_facts, PyObject *file,
       Py_ssize_t number, Py_ssize_t offset, Py_ssize_t item, PyObject **args)
{
    Py_ssize_t n = PyTuple_GET_SIZE(template);
    PyObject *items[MAX_ROW], *row = NULL;
    PyObject *line = PyLong_FromSsize_t(number), *at = PyLong_FromSsize_t(offset);
    PyObject *index = PyLong_FromSsize_t(item);
    if (line && at && index && (row = PyTuple_New(n))) {
        for (Py_ssize_t i = 0; i < n; i++)
            items[i] = PyTuple_GET_ITEM(template, i);
        items[0] = file;
        items[1] = line;
        items[2] = at;
        items[3] = index; /* the record's index in an array line */
        for (int i = 0; i < n_facts; i++)
            items[places[i]] = args[i];
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(row, i, Py_NewRef(items[i]));
    }
    Py_XDECREF(line);
    Py_XDECREF(at);
    Py_XDECREF(index);
    for (int i = 0; i < n_facts; i++)
        Py_DECREF(args[i]);
    return row;
}

/* The places of the constructor's facts in a row (as many as `kind`'s facts), checked
 * against the template's size. */
static int
places_of(PyObject *context, int kind, Py_ssize_t *places)
{
    PyObject *template = PyTuple_GET_ITEM(context, X_TEMPLATE);
    PyObject *given = PyTuple_GET_ITEM(context, X_PLACES);
    int n = kind >= K_SGLANG ? GENERATED_FACTS : FACTS;
    if (!PyTuple_Check(template) || PyTuple_GET_SIZE(template) > MAX_ROW
        || PyTuple_GET_SIZE(template) < 5 || !PyTuple_Check(given)
        || PyTuple_GET_SIZE(given) != n) {
        PyErr_SetString(PyExc_TypeError,
                        "chat_rows: a row template and a place for each fact are needed");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        places[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(given, i));
        if (places[i] < 5 || places[i] >= PyTuple_GET_SIZE(template)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "chat_rows: a place outside the row");
            return -1;
        }
    }
    return 0;
}

/* The rows of an SGLang batch line (`[{record}, ...]`, as the typed shapes read a list of
 * `SGLang`): one a record, its index the row's item, appended to `rows`; 1, or 0 when one
 * record is unsure or the array is empty (nothing appended), -1 on an error. */
static int
batch_rows(const byte *data, Py_ssize_t size, PyObject *context, const Py_ssize_t *places,
           PyObject *file, Py_ssize_t number, Py_ssize_t offset, PyObject *rows)
{
    Cursor c = {data, data + size};
    Py_ssize_t before = PyList_GET_SIZE(rows), item = 0;
    int status = 1;
    if (!take(&c, '[') || take(&c, ']'))
        return 0;
    do {
        Generated g;
        PyObject *values[GENERATED_FACTS];
        if (generated_object(&c, &g, K_SGLANG)) {
            status = 0;
            break;
        }
        if ((status = generated_values(&g, K_SGLANG, context, values)) <= 0)
            break;
        PyObject *row = row_of(PyTuple_GET_ITEM(context, X_TEMPLATE), places, GENERATED_FACTS,
                               file, number, offset, item++, values);
        if (!row || PyList_Append(rows, row) < 0) {
            Py_XDECREF(row);
            status = -1;
            break;
        }
        Py_DECREF(row);
    } while (take(&c, ','));
    if (status == 1) {
        int closed = take(&c, ']');
        skip_space(&c);
        status = closed && c.at == c.end;
    }
    /* an unsure line is the typed shapes' whole (an error propagates as it is) */
    if (status == 0 && PyList_SetSlice(rows, before, PyList_GET_SIZE(rows), NULL) < 0)
        return -1;
    return status;
}

/* chat_rows(context, data, start, end, number, offset, file, rows): from `start`, each
 * complete line of `data[:end]` that is the usual chat record (`openai_chat`: a text
 * completion, a closer of streams, is left to the caller) becomes a row appended to `rows`;
 * stops at the first other line (or one with a `\r` before its newline, or a BOM at the
 * file's start, which `Block.rows` cuts). `number`: the lines before `start`; `offset`: the
 * file offset of `data[0]`. Returns (where it stopped, the lines before that). */
static PyObject *
chat_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t start, end, number, offset;
    if (nargs != 8 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != X_SIZE
        || !PyList_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError,
                        "chat_rows(context, data, start, end, number, offset, file, rows)");
        return NULL;
    }
    Py_ssize_t places[FACTS];
    int kind = kind_of(args[0]);
    if (kind < 0 || places_of(args[0], kind, places) < 0)
        return NULL;
    start = PyLong_AsSsize_t(args[2]);
    end = PyLong_AsSsize_t(args[3]);
    number = PyLong_AsSsize_t(args[4]);
    offset = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "chat_rows: start and end must lie in data");
        return NULL;
    }
    const byte *data = view.buf;
    int failed = 0;
    while (start < end) {
        const byte *newline = memchr(data + start, '\n', (size_t)(end - start));
        if (!newline)
            break;
        Py_ssize_t stop = newline - data;
        if (stop > start && data[stop - 1] == '\r')
            break;
        if (start == 0 && offset == 0 && stop - start >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
            break;
        if (kind == K_SGLANG && stop > start && data[start] == '[') { /* a batch of records */
            int status = batch_rows(data + start, stop - start, args[0], places, args[6],
                                    number + 1, offset + start, args[7]);
            if (status <= 0) {
                failed = status < 0;
                break;
            }
            number++;
            start = stop + 1;
            continue;
        }
        PyObject *values[FACTS];
        int n = 0, status = line_values(data + start, stop - start, kind, args[0], 1, values, &n);
        if (status == 0)
            break;
        PyObject *row = NULL;
        if (status > 0)
            row = row_of(PyTuple_GET_ITEM(args[0], X_TEMPLATE), places, n, args[6], number + 1,
                         offset + start, 0, values);
        if (!row || PyList_Append(args[7], row) < 0) {
            Py_XDECREF(row);
            failed = 1;
            break;
        }
        Py_DECREF(row);
        number++;
        start = stop + 1;
    }
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    return Py_BuildValue("(nn)", start, number);
}

static PyMethodDef methods[] = {
    {"chat_rows", (PyCFunction)(void (*)(void))chat_rows, METH_FASTCALL,
     "chat_rows(context, data, start, end, number, offset, file, rows): the usual chat "
     "records of a run of complete lines appended to `rows` as token-table rows, up to the "
     "first other line; (where it stopped, the lines before it)."},
    {"chat_facts", (PyCFunction)(void (*)(void))chat_facts, METH_FASTCALL,
     "chat_facts(context, line): the facts of a spelled line holding the usual OpenAI chat "
     "completion (context: fast.chatline.CONTEXT), else None."},
    {NULL, NULL, 0, NULL},
};

GENLEDGER_MODULE(_chatline, "The usual OpenAI chat completion line read in C (genledger.fast.chatline).")
