// announced.js: graphql-inspector's completion handler for check.sh (diff
// --onComplete). A breaking change since hack/schema/released.graphqls is
// announced when its schema coordinate, in backticks, is in the section of
// docs/schema-changes.md (or $SCHEMA_CHANGES_DOC) under a "## Unreleased"
// heading. Prints each breaking change, marked; exits 1 if one is not.
'use strict';
const fs = require('fs');
const path = require('path');

const doc = process.env.SCHEMA_CHANGES_DOC || path.join(__dirname, '..', '..', 'docs', 'schema-changes.md');

// The inspector names an argument Type.field.arg; a coordinate may also be
// written as the GraphQL spec does, Type.field(arg:). Both read the same.
const normalise = (c) => c.trim().replace(/\((\w+):\)$/, '.$1');

// The coordinates announced: every `…` of the Unreleased section.
function announced(text) {
  const section = text.split(/^(?=## )/m).find((s) => /^## Unreleased\b/.test(s)) || '';
  return new Set([...section.matchAll(/`([^`\n]+)`/g)].map((m) => normalise(m[1])));
}

module.exports = ({ breakingChanges, dangerousChanges, nonBreakingChanges }) => {
  const known = announced(fs.readFileSync(doc, 'utf8'));
  const coordinate = (c) => c.path || c.type;
  const missing = breakingChanges.filter((c) => !known.has(normalise(coordinate(c))));
  for (const c of breakingChanges) {
    console.error(`${missing.includes(c) ? 'NOT ANNOUNCED' : 'announced    '} \`${coordinate(c)}\`: ${c.message}`);
  }
  console.error(`${breakingChanges.length} breaking (${missing.length} not announced), ${dangerousChanges.length} dangerous, ` +
    `${nonBreakingChanges.length} safe changes since hack/schema/released.graphqls`);
  if (missing.length > 0) {
    console.error(`Announce each breaking change in ${path.relative(process.cwd(), doc)} under "## Unreleased": ` +
      'its coordinate in backticks, and what a client must do.');
    process.exit(1);
  }
};
