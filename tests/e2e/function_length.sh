#!/bin/sh
# No function in src/cli/ is longer than 60 lines (the lines between its
# opening and closing brace): a command is its option table and a short
# body (src/cli/opts.c runs the tables). A function starts where a line at
# brace depth 0 opens a brace after a parenthesis with no '=' before it
# (an initializer is not a function). Comments, strings and characters
# are blanked first.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
MAX=60
ALLOW="" # functions excused from the limit: none
for f in src/cli/*.c; do
  awk -v max=$MAX -v file="$f" -v allow=" $ALLOW " '
    function count(s, c,   n, i) {
      n = 0
      for (i = 1; i <= length(s); i++)
        if (substr(s, i, 1) == c)
          n++
      return n
    }
    {
      line = $0
      if (incomment) {
        if (!index(line, "*/")) {
          line = ""
        } else {
          line = substr(line, index(line, "*/") + 2)
          incomment = 0
        }
      }
      gsub(/"([^"\\]|\\.)*"/, "\"\"", line)   # strings hold no braces
      gsub(/\x27([^\x27\\]|\\.)*\x27/, "0", line) # nor do characters
      gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", line)
      if (index(line, "/*")) {
        line = substr(line, 1, index(line, "/*") - 1)
        incomment = 1
      }
      sub(/\/\/.*/, "", line)
      if (depth == 0) {
        head = head " " line
        if (line ~ /;[ \t]*$/ || line ~ /^#/)
          head = ""
      }
      opens = count(line, "{")
      if (depth == 0 && opens > 0) {
        infn = head ~ /\(/ && head !~ /=/
        start = NR
        name = head
        head = ""
      }
      depth += opens - count(line, "}")
      if (depth == 0 && opens + count(line, "}") > 0 && infn) {
        body = NR - start - 1
        sub(/\(.*/, "", name)
        sub(/.*[ *]/, "", name)
        if (body > max && index(allow, " " name " ") == 0) {
          printf "%s:%d: %s is %d lines long (at most %d)\n", file, start,
                 name, body, max
          bad = 1
        }
        infn = 0
      }
    }
    END { exit bad }' "$f" || fail "$f has a function over $MAX lines"
done
finish function_length
