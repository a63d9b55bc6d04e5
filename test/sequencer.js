// Longest spec files first, from the durations checked in (test/durations.json, written by
// scripts/update-durations.js from a CI log): a clean clone has no Jest cache, and Jest alone would order the files by
// size, so a long spec could start last and run with the other worker idle. Files not in the list keep Jest's order
// (its cache's times, else size) after the listed ones; a spec that failed in this checkout's last run still goes first.
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;
const durations = require('./durations.json');

const root = path.resolve(__dirname, '..');

class LongestFirstSequencer extends Sequencer {
  sort(tests) {
    const jestOrder = super.sort([...tests]);
    const rank = new Map(jestOrder.map((test, i) => [test.path, i]));
    const listed = (test) => durations[path.relative(root, test.path).split(path.sep).join('/')];
    return jestOrder.sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1;
      const [da, db] = [listed(a), listed(b)];
      if (da !== undefined && db !== undefined && da !== db) return db - da;
      if ((da === undefined) !== (db === undefined)) return da === undefined ? 1 : -1;
      return rank.get(a.path) - rank.get(b.path);
    });
  }
}

module.exports = LongestFirstSequencer;
