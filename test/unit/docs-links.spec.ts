import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const PAGES = [
  'README.md',
  'bench/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
];

/** GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped, spaces as `-`; repeats get `-1`, `-2`... */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\- _]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Every link of a page to a file of the repository (not a URL), outside code: `[text](target)`. */
function localLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1])
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe('README.md and docs/', () => {
  it.each(PAGES)('%s: every link to a file of the repository, and to a heading in it, resolves', (page) => {
    const broken = localLinks(readFileSync(join(ROOT, page), 'utf8')).filter((target) => {
      const [path, anchor] = target.split('#');
      const file = path === '' ? join(ROOT, page) : join(ROOT, dirname(page), path);
      if (!existsSync(file)) return true;
      if (anchor === undefined || statSync(file).isDirectory() || !file.endsWith('.md')) return false;
      return !anchorsOf(readFileSync(file, 'utf8')).has(anchor);
    });
    expect(broken).toEqual([]);
  });

  it('README.md is one screen of a start: under 150 lines, every longer story in docs/', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    expect(lines).toBeLessThan(150);
  });

  it('links every page of docs/ from README.md', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const linked = new Set(localLinks(readme).map((target) => target.split('#')[0]));
    const unlinked = PAGES.filter((page) => page.startsWith('docs/') && !linked.has(relative(ROOT, join(ROOT, page))));
    expect(unlinked).toEqual([]);
  });
});
