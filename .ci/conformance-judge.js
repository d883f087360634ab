// Judges one run of the official conformance suite: reads the results directory the suite
// wrote (`-o DIR`), prints one line per scenario and a summary line, and exits non-zero on
// any unexpected failure. Used by .ci/conformance.sh and .ci/conformance-client.sh through
// judge() in .ci/conformance-lib.sh.
//
// Args: KIND LABEL RESULTS-DIR REQUIRED-LIST EXPECTED-FILE
//   KIND           `server` (result folders are `server-<scenario>-<timestamp>`) or `client`
//                  (`<scenario>-<timestamp>`, possibly in sub-folders named for a prefix);
//   REQUIRED-LIST  the scenarios the suite must report on, one per line: a missing one fails;
//   EXPECTED-FILE  known failures, one per line, `#` comments; `QUALIFIER:scenario` applies
//                  only to suites whose LABEL contains QUALIFIER (scenario names never contain
//                  `:`). A known failure that passes is reported, so the file can shrink.
const fs = require('fs');
const path = require('path');
const [kind, label, dir, requiredFile, expectedFile] = process.argv.slice(2);
if (kind !== 'server' && kind !== 'client') {
  console.error(`conformance-judge: KIND must be server or client, not ${kind}`);
  process.exit(2);
}
const lines = (f) => fs.existsSync(f)
  ? fs.readFileSync(f, 'utf8').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean)
  : [];
const required = lines(requiredFile);
const expected = new Set(lines(expectedFile).flatMap((l) => {
  const i = l.indexOf(':');
  if (i < 0) return [l];
  return label.includes(l.slice(0, i).trim()) ? [l.slice(i + 1).trim()] : [];
}));
const folder = new RegExp(`^${kind === 'server' ? 'server-' : ''}(.+)-\\d{4}-\\d{2}-\\d{2}T[\\d-]+Z$`);
const results = new Map();
const walk = (d, prefix) => {
  for (const entry of fs.existsSync(d) ? fs.readdirSync(d) : []) {
    const full = path.join(d, entry);
    const m = folder.exec(entry);
    const file = path.join(full, 'checks.json');
    if (m && fs.existsSync(file)) {
      let checks = null;
      try { checks = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { checks = null; }
      results.set(prefix + m[1], checks);
    } else if (fs.statSync(full).isDirectory()) {
      walk(full, prefix + entry + '/');
    }
  }
};
walk(dir, '');
for (const name of required) if (!results.has(name)) results.set(name, undefined);
const requiredSet = new Set(required);
let passed = 0, failed = 0, xfail = 0, checksOk = 0, checksBad = 0, warnings = 0, requiredOk = 0;
const unexpected = [], stale = [];
for (const [name, checks] of [...results.entries()].sort()) {
  let status, detail;
  if (!Array.isArray(checks)) {
    status = 'FAIL';
    detail = checks === undefined ? 'no result (scenario did not run or crashed)' : 'unreadable checks.json';
  } else {
    const count = (s) => checks.filter((c) => c.status === s).length;
    const ok = count('SUCCESS'), bad = count('FAILURE'), warn = count('WARNING');
    checksOk += ok; checksBad += bad; warnings += warn;
    status = bad > 0 ? 'FAIL' : 'PASS';
    detail = `${ok} passed, ${bad} failed` + (warn ? `, ${warn} warning(s)` : '');
    if (bad > 0) {
      detail += ': ' + checks.filter((c) => c.status === 'FAILURE')
        .map((c) => `${c.name}${c.errorMessage ? ` (${String(c.errorMessage).slice(0, 160)})` : ''}`)
        .join('; ');
    }
    if (warn > 0) {
      detail += ' | warnings: ' + checks.filter((c) => c.status === 'WARNING').map((c) => c.name).join(', ');
    }
  }
  if (status === 'PASS') {
    passed++;
    if (requiredSet.has(name)) requiredOk++;
    if (expected.has(name)) stale.push(name);
  } else if (expected.has(name)) {
    xfail++;
    status = 'XFAIL';
  } else {
    failed++;
    unexpected.push(name);
  }
  console.log(`  ${status.padEnd(5)} ${name}: ${detail}`);
}
for (const name of stale) console.log(`  note: ${name} passes now; remove it from ${expectedFile}`);
console.log(`${label}: ${results.size} ${kind === 'client' ? 'client ' : ''}scenarios, ${passed} passed, ` +
  `${failed} failed, ${xfail} expected failures; required by the suite: ${requiredOk}/${requiredSet.size} ` +
  `pass (checks: ${checksOk} passed, ${checksBad} failed, ${warnings} warnings)`);
process.exit(unexpected.length > 0 ? 1 : 0);
