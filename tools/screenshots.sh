#!/usr/bin/env bash
# tools/screenshots.sh — the pictures of docs/ taken from the real HTML report (make screenshots),
# so that they show what cprof draws today:
#
#   docs/flamegraph.png       README's picture: the report's flame graph of examples/json_demo.lua
#   docs/report-table.png     the table, a function chosen: the graph focused, its callers and callees
#   docs/report-source.png    the source heat map of that function (CPROF_LINES=1)
#   docs/report-memory.png    a memory profile (CPROF_MEMORY=1): the live bytes' graph and the leaks
#   docs/report-diff.png      a diff: the demo against itself with escape_string made slower
#
# The profiles are made here, under build/screenshots/, by the checkout's cprof (make's
# environment); Chromium runs headless through playwright-core, as the export specs drive it
# (spec/readers/browser.js), from build/export-readers (make export-readers).

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
readers=build/export-readers
if [ ! -f "$readers/node_modules/playwright-core/package.json" ] || ! command -v chromium > /dev/null; then
  echo "screenshots: Chromium and playwright-core are needed (make export-readers installs them)" >&2
  exit 1
fi
work=build/screenshots
rm -rf "$work"
mkdir -p "$work"
records=400

# profile OUT SETTING SCRIPT: the dump of SCRIPT under cprof.auto with SETTING (VAR=value), in OUT.
profile() {
  env CPROF_OUT="$1" CPROF_QUIET=1 "$2" lua5.4 -l cprof.auto "$3" "$records" > /dev/null
}

profile "$work/demo.prof" CPROF_LINES=1 examples/json_demo.lua
profile "$work/memory.prof" CPROF_MEMORY=1 examples/json_demo.lua
# A copy of the demo, then the copy with escape_string slower: on the function's own line, so that
# every other line stays where it was and the two profiles' functions match.
cp examples/json_demo.lua "$work/json_demo.lua"
(cd "$work" && profile base.prof CPROF_LINES=0 json_demo.lua)
sed -i 's/^local function escape_string(s)$/local function escape_string(s) for _ = 1, 300 do end/' \
  "$work/json_demo.lua"
grep -q 'escape_string(s) for _' "$work/json_demo.lua" || { echo "screenshots: escape_string not found" >&2; exit 1; }
(cd "$work" && profile slower.prof CPROF_LINES=0 json_demo.lua)

cprof-stats "$work/demo.prof" --html --title "examples/json_demo.lua" -o "$work/demo.html"
cprof-stats "$work/memory.prof" --html --title "examples/json_demo.lua, CPROF_MEMORY=1" -o "$work/memory.html"
cprof-stats "$work/slower.prof" --diff "$work/base.prof" --html \
  --title "examples/json_demo.lua with escape_string slower, against the original" -o "$work/diff.html"

row='#table tbody td.fn'
cat > "$work/jobs.json" <<EOF
[
 { "kind": "html", "file": "$work/demo.html", "viewport": [1200, 700], "steps": [
   { "hover": "#boxes > .b", "text": "json.encode" },
   { "shot": "docs/flamegraph.png", "of": "#overview" } ] },
 { "kind": "html", "file": "$work/demo.html", "viewport": [1300, 1000], "steps": [
   { "click": "$row", "text": "(Encoder:object)" },
   { "shot": "docs/report-table.png" },
   { "click": "#tabs button", "text": "Source" },
   { "shot": "docs/report-source.png", "of": "#tab-source" } ] },
 { "kind": "html", "file": "$work/memory.html", "viewport": [1300, 1000], "steps": [
   { "select": "#weight", "value": "live" },
   { "click": "#tabs button", "text": "Memory" },
   { "shot": "docs/report-memory.png" } ] },
 { "kind": "html", "file": "$work/diff.html", "viewport": [1300, 1000], "steps": [
   { "hover": "#boxes > .b", "text": "escape_string" },
   { "shot": "docs/report-diff.png" } ] }
]
EOF
env -u LD_PRELOAD node spec/readers/browser.js "$readers" "$work/jobs.json" > "$work/results.json"
# every page drew itself without an error or a request
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const bad = r.filter(x => x.error || x.errors.length || x.requests.length);
  if (bad.length) { console.error("screenshots: " + JSON.stringify(bad)); process.exit(1); }
' "$work/results.json"
ls -l docs/flamegraph.png docs/report-*.png
