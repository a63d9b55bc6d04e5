import { deferredPackage } from '../../../src/api/deferred-decorators';

/** A package whose decorator notes each application on the class's log. */
function fakePackage(loads: string[]) {
  const log: string[] = [];
  return {
    log,
    deferred: deferredPackage(() => {
      loads.push('loaded');
      return { Note: (text: string) => (_target: object, key?: string | symbol) => void log.push(`${String(key)}:${text}`) };
    }),
  };
}

describe('deferredPackage: decorators of a package loaded on first use', () => {
  it('loads nothing until asked, then replays every application in the order it happened', () => {
    const loads: string[] = [];
    const { log, deferred } = fakePackage(loads);
    const Note = deferred.decorator('Note');
    class Body {
      @Note('second') @Note('first') field?: string;
      @Note('third') other?: string;
    }
    expect(new Body()).toBeInstanceOf(Body);
    expect(loads).toEqual([]);
    expect(log).toEqual([]);
    deferred.load();
    deferred.load();
    expect(loads).toEqual(['loaded']);
    expect(log).toEqual(['field:first', 'field:second', 'other:third']);
  });

  it('applies the real decorator at once after the package is loaded', () => {
    const { log, deferred } = fakePackage([]);
    deferred.load();
    const Note = deferred.decorator('Note');
    class Late {
      @Note('now') field?: string;
    }
    expect(new Late()).toBeInstanceOf(Late);
    expect(log).toEqual(['field:now']);
  });
});
