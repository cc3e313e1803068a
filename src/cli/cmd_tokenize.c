/* cmd_tokenize.c — `mambalaya tokenize`: text to token ids and back with a
 * model's tokenizer.json (what run and generate do with --prompt). */
#include "cli.h"

#include "../lm/lm.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct TokenizeArgs {
  const char *model, *file, *text, *ids, *lines, *decode_lines;
} TokenizeArgs;

#define TO(field) offsetof(TokenizeArgs, field)
static const Opt tokenize_opts[] = {
    {"--model", OPT_PATH, TO(model), "DIR",
     .help = "the tokenizer of a model directory (DIR/tokenizer.json)"},
    {"--tokenizer", OPT_PATH, TO(file), "FILE", .help = "a tokenizer.json"},
    {"--text", OPT_STRING, TO(text), "TEXT",
     .help = "print TEXT's token ids, comma-separated"},
    {"--ids", OPT_STRING, TO(ids), "LIST",
     .help = "print the text of the ids (1,2,3)"},
    {"--lines", OPT_PATH, TO(lines), "FILE",
     .help = "each line a JSON string: print each one's ids as a JSON array, "
             "one line each"},
    {"--decode-lines", OPT_PATH, TO(decode_lines), "FILE",
     .help = "each line a JSON array of ids: print each one's text as a JSON "
             "string, one line each"},
};
static const OptTable tokenize_table = OPT_TABLE(tokenize_opts);

/* The tokenizer --model or --tokenizer names; NULL after a message. */
Tokenizer *open_tokenizer(const char *model, const char *file) {
  Buf path = {0};
  if (file)
    buf_printf(&path, "%s", file);
  else
    buf_printf(&path, "%s/tokenizer.json", model);
  Diag d = {0};
  Tokenizer *t = tokenizer_load(path.s, &d);
  if (!t)
    diag_print(&d, stderr);
  buf_free(&path);
  return t;
}

/* Does ID stand for a token of T? */
static bool is_token(const Tokenizer *t, long long id) {
  int len;
  return id >= 0 && id < tokenizer_size(t) && tokenizer_token(t, (int)id, &len);
}

/* The ids in LIST ("1,2,3"), each a token of T; false after a message. */
static bool parse_ids(const char *cmd, const char *list, const Tokenizer *t,
                      int **ids, int *n) {
  int cap = 0;
  *ids = NULL;
  *n = 0;
  if (!*list) {
    usage_error(cmd, "--ids is empty: give token ids, comma-separated");
    return false;
  }
  for (const char *p = list; *p;) {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || !is_token(t, v)) {
      usage_error(cmd, "--ids: expected ids of tokens (below %d), "
                       "comma-separated, at '%s'",
                  tokenizer_size(t), p);
      free(*ids);
      return false;
    }
    VEC_PUSH(*ids, *n, cap, (int)v);
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') {
      usage_error(cmd, "--ids: unexpected '%c'", *end);
      free(*ids);
      return false;
    }
  }
  return true;
}

void token_text(const Tokenizer *t, int id, Buf *out) {
  int len;
  const char *s = tokenizer_token(t, id, &len);
  if (!s)
    return;
  if (out->len + (size_t)len + 1 > out->cap) {
    out->cap = 2 * (out->len + (size_t)len + 1);
    out->s = xrealloc(out->s, out->cap);
  }
  memcpy(out->s + out->len, s, (size_t)len);
  out->len += (size_t)len;
  out->s[out->len] = 0;
}

/* The index of the first element of array V that is not the id of a
 * token of T, or -1. */
static long bad_id(const Tokenizer *t, const json_t *v) {
  for (size_t i = 0; i < json_array_size(v); i++) {
    const json_t *x = json_array_get(v, i);
    if (!json_is_integer(x) || !is_token(t, json_integer_value(x)))
      return (long)i;
  }
  return -1;
}

/* One line's value V (a string; DECODE: an array of ids) onto OUT as its
 * ids (DECODE: its text); an exit status, after a message naming PATH
 * and LINENO. */
static int one_line(const char *cmd, const char *path, int lineno,
                    const Tokenizer *t, bool decode, json_t *v, Buf *out) {
  long bad = v && decode && json_is_array(v) ? bad_id(t, v) : -1;
  if (!v || (decode ? !json_is_array(v) : !json_is_string(v))) {
    fprintf(stderr, "%s:%d: error: expected a JSON %s\n", path, lineno,
            decode ? "array of ids" : "string");
    return EXIT_INPUT;
  }
  if (bad >= 0) {
    fprintf(stderr, "%s:%d: error: element %ld is not the id of a token "
                    "(an integer below %d that stands for one)\n",
            path, lineno, bad + 1, tokenizer_size(t));
    return EXIT_INPUT;
  }
  int status = 0;
  if (decode) {
    Buf text = {0};
    buf_printf(&text, "%s", "");
    for (size_t i = 0; i < json_array_size(v); i++)
      token_text(t, (int)json_integer_value(json_array_get(v, i)), &text);
    json_t *s = json_stringn(text.s, text.len);
    char *js = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
    if (js)
      buf_printf(out, "%s\n", js);
    else
      status = usage_error(cmd, "line %d does not decode to UTF-8 text",
                           lineno);
    free(js);
    json_decref(s);
    buf_free(&text);
    return status;
  }
  int *ids, n;
  Diag d = {0};
  if (!tokenizer_encode(t, json_string_value(v), json_string_length(v), &ids,
                        &n, &d)) {
    fprintf(stderr, "%s:%d: error: %s\n", path, lineno, d.msg);
    return EXIT_INPUT;
  }
  buf_printf(out, "[");
  for (int i = 0; i < n; i++)
    buf_printf(out, "%s%d", i ? ", " : "", ids[i]);
  buf_printf(out, "]\n");
  free(ids);
  return 0;
}

/* Each line of PATH a JSON string (DECODE: an array of ids), printed as
 * its ids (DECODE: its text) on a line of its own. PATH is read as every
 * text input is: a regular file or a pipe, at most INPUT_TEXT_MAX bytes.
 * Returns an exit status. */
static int each_line(const char *cmd, const char *path, const Tokenizer *t,
                     bool decode) {
  Diag rd = {0};
  size_t size;
  char *all = read_input(path, INPUT_TEXT_MAX, &size, &rd);
  if (!all) {
    diag_print(&rd, stderr);
    return EXIT_INPUT;
  }
  Buf out = {0};
  int lineno = 0, status = 0;
  for (size_t at = 0; !status && at < size;) {
    const char *line = all + at, *nl = memchr(line, '\n', size - at);
    size_t got = nl ? (size_t)(nl - line) + 1 : size - at;
    at += got;
    json_error_t err;
    json_t *v = json_loadb(line, got, JSON_DECODE_ANY, &err);
    status = one_line(cmd, path, ++lineno, t, decode, v, &out);
    json_decref(v);
  }
  free(all);
  if (!status && out.s)
    emit(&out);
  buf_free(&out);
  return status;
}

/* --text: its ids, comma-separated. */
static int encode_text(const Tokenizer *t, const char *text) {
  int *ids, n;
  Diag d = {0};
  if (!tokenizer_encode(t, text, strlen(text), &ids, &n, &d)) {
    fprintf(stderr, "mambalaya tokenize: error: --text: %s\n", d.msg);
    return EXIT_INPUT;
  }
  Buf out = {0};
  buf_printf(&out, "%s", "");
  for (int i = 0; i < n; i++)
    buf_printf(&out, "%s%d", i ? "," : "", ids[i]);
  buf_printf(&out, "\n");
  emit(&out);
  buf_free(&out);
  free(ids);
  return 0;
}

/* --ids: their text. */
static int decode_ids(const char *cmd, const Tokenizer *t, const char *list) {
  int *ids, n;
  if (!parse_ids(cmd, list, t, &ids, &n))
    return EXIT_INPUT;
  Buf out = {0};
  buf_printf(&out, "%s", "");
  for (int i = 0; i < n; i++)
    token_text(t, ids[i], &out);
  buf_printf(&out, "\n");
  emit(&out);
  buf_free(&out);
  free(ids);
  return 0;
}

static int tokenize(const Parsed *p, void *opts) {
  const TokenizeArgs *o = opts;
  int inputs = !!o->text + !!o->ids + !!o->lines + !!o->decode_lines;
  if ((!o->model == !o->file) || inputs != 1)
    return usage_error(p->cmd, "needs --model or --tokenizer, and one of "
                               "--text, --ids, --lines, --decode-lines (see "
                               "%s --help)",
                       p->cmd);
  Tokenizer *t = open_tokenizer(o->model, o->file);
  if (!t)
    return EXIT_INPUT;
  int status;
  if (o->lines || o->decode_lines)
    status = each_line(p->cmd, o->lines ? o->lines : o->decode_lines, t,
                       !o->lines);
  else if (o->text)
    status = encode_text(t, o->text);
  else
    status = decode_ids(p->cmd, t, o->ids);
  tokenizer_free(t);
  return status;
}

const Command tokenize_command = {
    "tokenize", "text to token ids and back (tokenizer.json)",
    .about = "Turn text into token ids and back with a byte-level BPE "
             "tokenizer.json\n(GPT-2, GPT-NeoX: what Mamba checkpoints "
             "carry). Give --model or\n--tokenizer, and one of --text, "
             "--ids, --lines and --decode-lines.\n",
    .opts = &tokenize_table,
    .example = "mambalaya tokenize --model m130 --text \"Hello, world\"\n",
    .size = sizeof(TokenizeArgs), .run = tokenize,
};
