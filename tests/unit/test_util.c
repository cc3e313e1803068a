/* test_util.c — the shared helpers every module leans on: checked element
 * counts, plain decimals, escaping, reading inputs (only regular files
 * and pipes, with a limit), writing outputs (staged, never through a
 * user's file, sets that land together), one-line diagnostics, the YAML
 * loader's duplicate keys on a huge mapping, and JSON figures that are
 * not finite. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/report/report.h"
#include "../../src/ydoc/ydoc.h"
#include "test.h"

TEST(util_count_elements) {
  uint64_t n = 0;
  CHECK(count_elements(2, (int64_t[]){3, 4}, 100, &n));
  CHECK_INT(n, 12);
  CHECK(count_elements(0, NULL, 100, &n));
  CHECK_INT(n, 1);
  CHECK(count_elements(2, (int64_t[]){10, 10}, 100, &n));
  CHECK_INT(n, 100);
  CHECK(!count_elements(2, (int64_t[]){10, 11}, 100, &n));
  /* Whatever the order, a zero does not hide a huge dimension. */
  const uint64_t limit = (uint64_t)1 << 60;
  int64_t big = (int64_t)1 << 62;
  CHECK(!count_elements(2, (int64_t[]){big, 0}, limit, &n));
  CHECK(!count_elements(2, (int64_t[]){0, big}, limit, &n));
  CHECK(count_elements(2, (int64_t[]){0, 7}, limit, &n));
  CHECK_INT(n, 0);
  /* A product past 64 bits, and a negative dimension. */
  int64_t half = (int64_t)1 << 32;
  CHECK(!count_elements(3, (int64_t[]){half, half, 2}, UINT64_MAX, &n));
  CHECK(!count_elements(1, (int64_t[]){-1}, UINT64_MAX, &n));
  uint64_t p;
  CHECK(mul_u64(1u << 31, 1u << 31, &p) && p == (uint64_t)1 << 62);
  CHECK(!mul_u64(UINT64_MAX, 2, &p));
  CHECK(!add_u64(UINT64_MAX, 1, &p));
}

TEST(util_parse_decimal) {
  double v = 0;
  CHECK(parse_decimal("16", &v) && v == 16);
  CHECK(parse_decimal(" 2.5 ", &v) && v == 2.5);
  CHECK(parse_decimal("1e3", &v) && v == 1000);
  CHECK(parse_decimal("-.5", &v) && v == -0.5);
  static const char *const bad[] = {"0x10", "inf", "nan", "1e400", "", "e5",
                                    "1 2", "16k", "--1", NULL};
  for (int i = 0; bad[i]; i++)
    if (parse_decimal(bad[i], &v))
      test_fail(__FILE__, __LINE__, "'%s' was accepted", bad[i]);
  CHECK_INT(decimal_length("12.5e-3 GHz"), 7);
  CHECK_INT(decimal_length("0x10"), 1);
  CHECK_INT(decimal_length("x"), 0);
}

TEST(util_escaping) {
  Buf b = {0};
  buf_escaped(&b, "a\nb\x1b[2J\x7f");
  CHECK_STR(b.s, "a\\x0ab\\x1b[2J\\x7f");
  CHECK_INT(escaped_len("a\nb\x1b[2J\x7f"), (long long)b.len);
  buf_free(&b);
  buf_escaped(&b, "");
  CHECK_STR(b.s, "");
  buf_free(&b);
  Buf s = {0};
  buf_bytes(&s, 512);
  buf_printf(&s, ", ");
  buf_bytes(&s, 3.5 * (1 << 30));
  CHECK_STR(s.s, "512 B, 3.50 GiB");
  buf_free(&s);
}

/* diag_print keeps one error on one line, whatever the input's names. */
TEST(util_diag_one_line) {
  Diag d = {0};
  diag_error(&d, "a\nb.yaml", (Loc){3, 4}, "unknown name '%s'", "x\ny");
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  diag_print(&d, f);
  fclose(f);
  CHECK_STR(text, "a\\x0ab.yaml:3:4: error: unknown name 'x\\x0ay'\n");
  free(text);
}

/* A fresh directory under /tmp for one test. */
static char *scratch(const char *tag) {
  Buf b = {0};
  buf_printf(&b, "/tmp/mambalaya-unit-%ld-%s", (long)getpid(), tag);
  mkdir(b.s, 0700);
  return b.s;
}

static char *path_in(const char *dir, const char *name) {
  Buf b = {0};
  buf_printf(&b, "%s/%s", dir, name);
  return b.s;
}

/* The names in DIR, sorted, joined by spaces. */
static char *listing(const char *dir) {
  DIR *d = opendir(dir);
  char *names[64];
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) && n < 64)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      names[n++] = xstrdup(e->d_name);
  if (d)
    closedir(d);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && strcmp(names[j], names[j - 1]) < 0; j--) {
      char *t = names[j];
      names[j] = names[j - 1];
      names[j - 1] = t;
    }
  Buf b = {0};
  buf_printf(&b, "%s", "");
  for (int i = 0; i < n; i++) {
    buf_printf(&b, "%s%s", i ? " " : "", names[i]);
    free(names[i]);
  }
  return b.s;
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    char *p = path_in(dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
      remove_tree(p);
    else
      unlink(p);
    free(p);
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

static char *slurp(const char *path) {
  size_t len;
  return read_file(path, &len);
}

TEST(util_read_input_kinds_and_limits) {
  char *dir = scratch("read");
  char *file = path_in(dir, "f.txt");
  CHECK(write_file_atomic(file, "hello", 5));
  size_t len = 0;
  Diag d = {0};
  char *s = read_input(file, 100, &len, &d);
  CHECK(s && len == 5 && strcmp(s, "hello") == 0);
  free(s);
  Diag big = {0};
  CHECK(read_input(file, 4, &len, &big) == NULL);
  CHECK(strstr(big.msg, "more than 4 bytes") != NULL);
  Diag dev = {0};
  CHECK(read_input("/dev/zero", 100, &len, &dev) == NULL);
  CHECK_STR(dev.msg, "cannot read: a character device, not a regular file "
                     "or a named pipe");
  Diag dd = {0};
  CHECK(read_input(dir, 100, &len, &dd) == NULL);
  CHECK(strstr(dd.msg, "a directory, not a regular file") != NULL);
  errno = 0;
  CHECK(read_file_max("/dev/zero", 100, &len) == NULL && errno == EINVAL);
  Diag none = {0};
  char *missing = path_in(dir, "none");
  CHECK(read_input(missing, 100, &len, &none) == NULL);
  CHECK(strstr(none.msg, "No such file") != NULL);
  free(missing);
  free(file);
  remove_tree(dir);
  free(dir);
}

/* A user's X.tmp (here a symlink to a file of theirs) is neither written
 * through nor removed; nothing is left beside X. */
TEST(util_write_file_atomic_leaves_user_files) {
  char *dir = scratch("write");
  char *target = path_in(dir, "mine"), *tmp = path_in(dir, "res.tmp");
  char *res = path_in(dir, "res");
  CHECK(write_file_atomic(target, "precious", 8));
  CHECK(symlink(target, tmp) == 0);
  CHECK(write_file_atomic(res, "result 1", 8));
  CHECK(write_file_atomic(res, "result 2", 8));
  char *a = slurp(res), *b = slurp(target), *l = listing(dir);
  CHECK_STR(a, "result 2");
  CHECK_STR(b, "precious");
  CHECK_STR(l, "mine res res.tmp");
  free(a);
  free(b);
  free(l);
  /* A missing directory fails and creates nothing. */
  char *deep = path_in(dir, "no/such/file");
  errno = 0;
  CHECK(!write_file_atomic(deep, "x", 1) && errno == ENOENT);
  /* A directory in the way: the temporary is removed. */
  char *sub = path_in(dir, "sub");
  mkdir(sub, 0700);
  CHECK(!write_file_atomic(sub, "x", 1));
  l = listing(dir);
  CHECK_STR(l, "mine res res.tmp sub");
  free(l);
  Diag d = {0};
  CHECK(!output_check(sub, &d));
  CHECK(strstr(d.msg, "is a directory") != NULL);
  Diag d2 = {0};
  CHECK(!output_check(deep, &d2));
  CHECK(output_check(res, &d2));
  free(sub);
  free(deep);
  free(target);
  free(tmp);
  free(res);
  remove_tree(dir);
  free(dir);
}

TEST(util_outset_lands_together) {
  char *dir = scratch("set");
  char *out = path_in(dir, "a/b");
  /* Staged files do not exist until the commit, nor does their
   * directory. */
  OutSet *s = outset_new(out);
  Diag d = {0};
  CHECK(outset_put(s, "one", "1", 1, &d));
  CHECK(outset_put(s, "two", "22", 2, &d));
  char *l = listing(dir);
  CHECK_STR(l, "");
  free(l);
  bool refused = true;
  CHECK(outset_commit(s, &refused, &d) && !refused);
  outset_free(s);
  l = listing(out);
  CHECK_STR(l, "one two");
  free(l);
  char *two = path_in(out, "two"), *one = path_in(out, "one");
  char *t = slurp(two);
  CHECK_STR(t, "22");
  free(t);
  /* A protected input among the targets: refused, nothing moves. */
  s = outset_new(out);
  outset_protect(s, one);
  CHECK(outset_put(s, "two", "new", 3, &d));
  CHECK(outset_put(s, "one", "new", 3, &d));
  Diag e = {0};
  CHECK(!outset_commit(s, &refused, &e) && refused);
  CHECK(strstr(e.msg, "is the input") != NULL);
  outset_free(s);
  t = slurp(two);
  CHECK_STR(t, "22");
  free(t);
  l = listing(out);
  CHECK_STR(l, "one two");
  free(l);
  /* A directory where a file must go: refused, the others unchanged;
   * an uncommitted set leaves nothing. */
  char *sub = path_in(out, "three");
  mkdir(sub, 0700);
  s = outset_new(out);
  CHECK(outset_put(s, "two", "new", 3, &d));
  CHECK(outset_put(s, "three", "x", 1, &d));
  Diag f = {0};
  CHECK(!outset_commit(s, &refused, &f) && refused);
  outset_free(s);
  s = outset_new(out);
  CHECK(outset_put(s, "two", "new", 3, &d));
  outset_free(s);
  t = slurp(two);
  CHECK_STR(t, "22");
  free(t);
  l = listing(out);
  CHECK_STR(l, "one three two");
  free(l);
  /* A file where the directory must go. */
  char *file_dir = path_in(one, "x");
  Diag g = {0};
  CHECK(!output_dir_check(file_dir, &g));
  CHECK(strstr(g.msg, "not a directory") != NULL);
  CHECK(output_dir_check(out, &g));
  free(file_dir);
  free(sub);
  free(one);
  free(two);
  free(out);
  remove_tree(dir);
  free(dir);
}

TEST(util_same_file) {
  char *dir = scratch("same");
  char *a = path_in(dir, "a"), *b = path_in(dir, "../");
  CHECK(write_file_atomic(a, "x", 1));
  Buf via = {0};
  buf_printf(&via, "%s%s/a", b, strrchr(dir, '/') + 1);
  CHECK(same_file(a, via.s));
  CHECK(!same_file(a, dir));
  CHECK(!same_file(a, "/nonexistent/file"));
  buf_free(&via);
  free(a);
  free(b);
  remove_tree(dir);
  free(dir);
}

/* 50 000 keys load (the duplicate check is a hash lookup, not a scan of
 * the keys before), and a duplicate among them is still found. */
TEST(ydoc_huge_mapping) {
  enum { N = 50000 };
  Buf b = {0};
  buf_printf(&b, "mapping:\n");
  for (int i = 0; i < N; i++)
    buf_printf(&b, "  k%d: %d\n", i, i);
  Diag d = {0};
  YamlDoc *doc = ydoc_parse("big.yaml", b.s, b.len, &d);
  CHECK(doc != NULL);
  if (doc) {
    const YamlNode *m = ydoc_get(doc->root, "mapping");
    CHECK(m && m->n == N);
    CHECK_STR(m->keys[N - 1]->text, "k49999");
  }
  ydoc_free(doc);
  buf_printf(&b, "  k123: again\n");
  Diag e = {0};
  CHECK(ydoc_parse("big.yaml", b.s, b.len, &e) == NULL);
  CHECK_INT(e.loc.line, N + 2);
  CHECK_STR(e.msg, "duplicate key 'k123' (first given at line 125)");
  buf_free(&b);
}

/* A local tag (AccelForge's `!Memory`) is refused as ever, except by
 * ydoc_parse_tagged, which keeps it on its node; a global tag outside the
 * core schema stays refused there too. */
TEST(ydoc_local_tags) {
  const char *text = "nodes:\n- !Memory\n  name: M\n- {name: C}\n";
  Diag d = {0};
  CHECK(ydoc_parse("t.yaml", text, strlen(text), &d) == NULL);
  CHECK_INT(d.loc.line, 2);
  CHECK_STR(d.msg, "YAML tag '!Memory' is not supported: specs are plain "
                   "data");
  Diag e = {0};
  YamlDoc *doc = ydoc_parse_tagged("t.yaml", text, strlen(text), &e);
  CHECK(doc != NULL);
  if (doc) {
    const YamlNode *nodes = ydoc_get(doc->root, "nodes");
    CHECK(nodes && nodes->n == 2);
    CHECK_STR(nodes->items[0]->tag, "!Memory");
    CHECK(nodes->items[1]->tag == NULL);
    CHECK(ydoc_get(nodes->items[0], "name")->tag == NULL);
  }
  ydoc_free(doc);
  const char *odd = "a: !<tag:example.com,2000:x> 1\n";
  Diag f = {0};
  CHECK(ydoc_parse_tagged("t.yaml", odd, strlen(odd), &f) == NULL);
  CHECK(strstr(f.msg, "is not supported") != NULL);
}

/* A figure that is not finite is written as null, not dropped, with a
 * warning on stderr for each: captured here and checked, so that the
 * test log shows no warning a test provokes on purpose. */
TEST(report_json_nonfinite_figures) {
  json_t *o = json_object();
  json_object_set_new(o, "ok", report_real(2.5));
  json_object_set_new(o, "latency_s", report_real(INFINITY));
  json_t *a = json_array();
  json_array_append_new(a, report_real(NAN));
  json_object_set_new(o, "list", a);
  Buf b = {0};
  FILE *err = tmpfile();
  CHECK(err != NULL);
  fflush(stderr);
  int saved = dup(2);
  dup2(fileno(err), 2);
  report_json(&b, o);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  json_decref(o);
  CHECK(strstr(b.s, "\"ok\": 2.5") != NULL);
  CHECK(strstr(b.s, "\"latency_s\": null") != NULL);
  CHECK(strstr(b.s, "null\n  ]") != NULL);
  char said[256] = "";
  rewind(err);
  said[fread(said, 1, sizeof said - 1, err)] = 0;
  fclose(err);
  CHECK_STR(said, "mambalaya: warning: latency_s is inf: written as null\n"
                  "mambalaya: warning: list[0] is NaN: written as null\n");
  buf_free(&b);
}
