// node scripts/longfns.cjs [min=100] [roots...]: functions (incl. arrows and methods) longer than min lines in packages/*/src (issue 27: factory closures over ~100 lines become named parts)
const ts = require('typescript');
const fs = require('fs'),
  path = require('path');
const min = +(process.argv[2] || 100);
const roots = process.argv.slice(3).length
  ? process.argv.slice(3)
  : fs.readdirSync('packages').map((p) => `packages/${p}/src`);
const out = [];
function walk(d) {
  if (!fs.existsSync(d)) return;
  for (const f of fs.readdirSync(d)) {
    const p = path.join(d, f);
    if (fs.statSync(p).isDirectory()) walk(p);
    else if (/\.ts$/.test(f) && !/\.d\.ts$/.test(f)) scan(p);
  }
}
function scan(file) {
  const src = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (n) => {
    if (ts.isFunctionLike(n) && n.body) {
      const a = src.getLineAndCharacterOfPosition(n.getStart()).line,
        b = src.getLineAndCharacterOfPosition(n.end).line;
      if (b - a + 1 > min) {
        const name = n.name
          ? n.name.getText()
          : ts.isVariableDeclaration(n.parent)
            ? n.parent.name.getText()
            : ts.isPropertyAssignment(n.parent)
              ? n.parent.name.getText()
              : '<anon>';
        out.push([b - a + 1, `${file}:${a + 1}`, name]);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
}
roots.forEach(walk);
out.sort((x, y) => y[0] - x[0]);
for (const o of out) console.log(o.join('\t'));
