import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { ActionKind } from './model-types';
import { DiskLevel } from './levels';
import { PathTable } from './path-table';
import { FingerprintSet } from './state-store';

/** The counters of a search after a completed level: with the level's states, what it needs to go on. */
export interface SearchProgress {
  depth: number;
  transitions: number;
  progressChecks: number;
  exempt: number;
  coverage: Record<ActionKind, number>;
  elapsedMs: number;
  /** States found at `depth` (the level to expand next). */
  newInLevel: number;
}

export interface Resumed {
  progress: SearchProgress;
  seen: FingerprintSet;
  paths: PathTable;
  frontier: DiskLevel;
}

/** Writes a file and puts it on disk before anything names it. */
function writeDurably(file: string, bytes: Buffer | string): void {
  const fd = openSync(file, 'w');
  try {
    const data = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    for (let at = 0; at < data.length;) at += writeSync(fd, data, at, data.length - at);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Replaces `file` at once: a reader sees the old content or the new, never part of one. */
function replaceAtomically(file: string, text: string): void {
  writeDurably(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
  const dir = openSync(join(file, '..'), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/**
 * A search's checkpoints in a directory (`--checkpoint DIR`, one per mode): after each completed level, the
 * fingerprints seen, the path table, the counters and the level to expand next (a hard link to the level's
 * file, which the search writes in `levels/`), each in a directory `depth-<d>` made whole before `current.json`
 * names it (written aside and renamed). A run killed at any instant leaves the last complete checkpoint named;
 * `--resume` goes on from it and gives the counts an uninterrupted run gives.
 */
export class Checkpoints {
  /** Where the search writes its levels (named files, so that a checkpoint can link them). */
  readonly levelDir: string;

  /** `identity`: the search's options as text; a checkpoint of other options is refused. */
  constructor(
    private readonly dir: string,
    private readonly identity: string,
  ) {
    this.levelDir = join(dir, 'levels');
    mkdirSync(this.levelDir, { recursive: true });
  }

  private current(): { depth: number; identity: string } | null {
    const file = join(this.dir, 'current.json');
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { depth: number; identity: string }) : null;
  }

  /** Records the search after level `progress.depth`; `frontier` holds the states found at that depth. */
  save(progress: SearchProgress, seen: FingerprintSet, paths: PathTable, frontier: DiskLevel): void {
    if (!frontier.file) throw new Error('a checkpoint needs the level in a named file (DiskLevel with a directory)');
    frontier.seal();
    const target = join(this.dir, `depth-${progress.depth}`);
    const building = `${target}.tmp`;
    rmSync(building, { recursive: true, force: true });
    rmSync(target, { recursive: true, force: true });
    mkdirSync(building);
    writeDurably(join(building, 'seen'), seen.toBuffer());
    const { parents, codes } = paths.toBuffers();
    writeDurably(join(building, 'parents'), parents);
    writeDurably(join(building, 'codes'), codes);
    linkSync(frontier.file, join(building, 'level'));
    writeDurably(join(building, 'progress.json'), JSON.stringify({ ...progress, frontier: frontier.length }));
    renameSync(building, target);
    replaceAtomically(
      join(this.dir, 'current.json'),
      JSON.stringify({ depth: progress.depth, identity: this.identity }),
    );
    this.removeStale(progress.depth);
  }

  /** The last checkpoint, its level linked afresh into `levels/` (so that the search may discard it); null if none. */
  resume(): Resumed | null {
    const current = this.current();
    // Levels of a run that was killed: no checkpoint names them.
    for (const name of readdirSync(this.levelDir)) rmSync(join(this.levelDir, name), { force: true });
    if (!current) return null;
    if (current.identity !== this.identity)
      throw new Error(`checkpoint in ${this.dir} is of another search: ${current.identity}, not ${this.identity}`);
    this.removeStale(current.depth);
    const at = join(this.dir, `depth-${current.depth}`);
    const { frontier: count, ...progress } = JSON.parse(
      readFileSync(join(at, 'progress.json'), 'utf8'),
    ) as SearchProgress & {
      frontier: number;
    };
    const file = join(this.levelDir, `resumed-${current.depth}`);
    linkSync(join(at, 'level'), file);
    return {
      progress,
      seen: FingerprintSet.fromBuffer(readFileSync(join(at, 'seen'))),
      paths: PathTable.fromBuffers(readFileSync(join(at, 'parents')), readFileSync(join(at, 'codes'))),
      frontier: DiskLevel.open(file, count),
    };
  }

  /** Every checkpoint but `depth`'s, and any left half-written. */
  private removeStale(depth: number): void {
    for (const name of readdirSync(this.dir))
      if (name.startsWith('depth-') && name !== `depth-${depth}`)
        rmSync(join(this.dir, name), { recursive: true, force: true });
  }
}
