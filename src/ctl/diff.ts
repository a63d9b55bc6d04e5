/**
 * A unified diff of two texts, line by line (longest common subsequence), with `context` lines
 * around each change; '' when they are equal. Configuration documents are small, so O(n·m) is fine.
 */
export function unifiedDiff(before: string, after: string, labels: [string, string], context = 3): string {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a[a.length - 1] === '') a.pop();
  if (b[b.length - 1] === '') b.pop();
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  type Op = { kind: ' ' | '-' | '+'; text: string; ai: number; bi: number };
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) ops.push({ kind: ' ', text: a[i++], ai: i, bi: ++j });
    // Removals before additions, as diff -u writes a changed line.
    else if (i < a.length && (j === b.length || lcs[i + 1][j] >= lcs[i][j + 1]))
      ops.push({ kind: '-', text: a[i++], ai: i, bi: j });
    else ops.push({ kind: '+', text: b[j++], ai: i, bi: j });
  }
  const changed = ops.map((op, index) => (op.kind !== ' ' ? index : -1)).filter((index) => index >= 0);
  if (changed.length === 0) return '';
  const lines = [`--- ${labels[0]}`, `+++ ${labels[1]}`];
  let start = 0;
  while (start < changed.length) {
    let end = start;
    while (end + 1 < changed.length && changed[end + 1] - changed[end] <= 2 * context + 1) end++;
    const from = Math.max(0, changed[start] - context);
    const to = Math.min(ops.length - 1, changed[end] + context);
    const hunk = ops.slice(from, to + 1);
    const aStart = hunk.find((op) => op.kind !== '+')?.ai ?? hunk[0].ai;
    const bStart = hunk.find((op) => op.kind !== '-')?.bi ?? hunk[0].bi;
    const aCount = hunk.filter((op) => op.kind !== '+').length;
    const bCount = hunk.filter((op) => op.kind !== '-').length;
    lines.push(
      `@@ -${aCount ? aStart : aStart}${aCount === 1 ? '' : `,${aCount}`} +${bStart}${bCount === 1 ? '' : `,${bCount}`} @@`,
    );
    for (const op of hunk) lines.push(`${op.kind}${op.text}`);
    start = end + 1;
  }
  return `${lines.join('\n')}\n`;
}
