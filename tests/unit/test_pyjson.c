/* json_from_python (util.h): Python's Infinity, -Infinity and NaN become
 * JSON of their width outside strings, and are kept inside them; both
 * config loaders read a published Mamba-2 config that holds one. */
#include <stdlib.h>

#include "../../src/lm/lm.h"
#include "../../src/util/util.h"
#include "test.h"

TEST(pyjson_words_outside_strings) {
  const char in[] = "{\"a\": [0.0, Infinity], \"b\": -Infinity, \"c\": NaN, "
                    "\"s\": \"NaN Infinity \\\" NaN\"}";
  char *out = json_from_python(in, sizeof in - 1);
  CHECK_STR(out, "{\"a\": [0.0, null    ], \"b\": null     , \"c\": 0e0, "
                 "\"s\": \"NaN Infinity \\\" NaN\"}");
  CHECK_INT(strlen(out), sizeof in - 1);
  free(out);
}

/* Mamba-Codestral's config.json (time_step_limit: [0.0, Infinity]) loads
 * as the language model's config too, as it does for eval --config. */
TEST(pyjson_mamba2_config_loads_for_the_executor) {
  ModelConfig cfg;
  Diag d = {0};
  bool ok = model_config_load("tests/configs/Mamba-Codestral-7B-v0.1.json",
                              &cfg, &d);
  if (!ok)
    test_fail(__FILE__, __LINE__, "%d:%d %s", d.loc.line, d.loc.col, d.msg);
  CHECK(ok);
  if (ok) {
    /* the file's hidden_size, num_hidden_layers, state_size, n_groups,
     * num_heads */
    CHECK_INT(cfg.version, 2);
    CHECK_INT(cfg.d_model, 4096);
    CHECK_INT(cfg.n_layer, 64);
    CHECK_INT(cfg.d_state, 128);
    CHECK_INT(cfg.ngroups, 8);
    CHECK_INT(cfg.n_heads, 128);
  }
}
