import { downstreamMembers } from '../../../src/ha/cascade';
import { Decision, decide, HaAction } from '../../../src/ha/decide';
import { cluster, leaderKey, member, primarySample, sample, snapshot } from './snapshot-factory';

type Row = [
  description: string,
  input: Parameters<typeof snapshot>[0],
  expected: Partial<{ need: string; verdict: string; actions: HaAction['type'][] }>,
];

const upstreamN2 = { name: 'n2', host: '127.0.0.1', port: 5434 };
const remoteMain = {
  host: '10.0.0.9',
  port: 5432,
  primary_slot_name: 'dr',
  restore_command: null,
  archive_cleanup_command: null,
  recovery_min_apply_delay: null,
  create_replica_methods: null,
};

function summarize(decision: Decision) {
  if ('need' in decision) return { need: decision.need };
  return { verdict: decision.verdict, actions: decision.actions.map((a) => a.type) };
}

describe('decide() on a cluster snapshot', () => {
  const rows: Row[] = [
    // DCS unreachable
    [
      'a primary that cannot read the DCS demotes itself',
      { cluster: null, dcsError: 'timeout', local: { sample: primarySample(), role: 'primary' } },
      { verdict: 'demoted self because DCS is not accessible and I was a leader', actions: ['demote'] },
    ],
    [
      'a replica that cannot read the DCS keeps running',
      { cluster: null, dcsError: 'timeout' },
      { verdict: 'DCS is not accessible', actions: [] },
    ],
    [
      'a replica that accepted a failsafe leader keeps its slots at the positions it sent',
      { cluster: null, config: { failsafe_mode: true }, failsafeLeader: 'n2' },
      { verdict: 'DCS is not accessible', actions: ['serveDownstreams'] },
    ],
    [
      '... not without use_slots',
      { cluster: null, config: { failsafe_mode: true, use_slots: false }, failsafeLeader: 'n2' },
      { verdict: 'DCS is not accessible', actions: [] },
    ],
    [
      'a paused primary keeps running without the DCS',
      { cluster: null, config: { pause: true }, local: { sample: primarySample() } },
      { verdict: 'DCS is not accessible', actions: [] },
    ],
    [
      'failsafe mode: the leader asks the members in /failsafe first',
      {
        cluster: null,
        config: { failsafe_mode: true },
        failsafeMembers: { n1: 'http://a', n2: 'http://b' },
        local: { sample: primarySample(), role: 'primary', leadership: 'leader' },
      },
      { need: 'failsafeRound' },
    ],
    [
      'failsafe mode: accepted by every member, the leader stays',
      {
        cluster: null,
        config: { failsafe_mode: true },
        failsafeMembers: { n1: 'http://a', n2: 'http://b' },
        failsafeResult: { accepted: true, validUntil: 1, refusals: [] },
        local: { sample: primarySample(), role: 'primary', leadership: 'leader' },
      },
      {
        verdict: 'continue to run as a leader because failsafe mode is enabled and all members are accessible',
        actions: ['holdInFailsafe', 'keepSlotsInFailsafe'],
      },
    ],
    [
      'failsafe mode: accepted, without use_slots the leader leaves its slots alone',
      {
        cluster: null,
        config: { failsafe_mode: true, use_slots: false },
        failsafeMembers: { n1: 'http://a', n2: 'http://b' },
        failsafeResult: { accepted: true, validUntil: 1, refusals: [] },
        local: { sample: primarySample(), role: 'primary', leadership: 'leader' },
      },
      {
        verdict: 'continue to run as a leader because failsafe mode is enabled and all members are accessible',
        actions: ['holdInFailsafe'],
      },
    ],
    [
      'failsafe mode: one member does not answer, the leader demotes',
      {
        cluster: null,
        config: { failsafe_mode: true },
        failsafeMembers: { n1: 'http://a', n2: 'http://b' },
        failsafeResult: { accepted: false, validUntil: 1, refusals: ['n2'] },
        local: { sample: primarySample(), role: 'primary', leadership: 'leader' },
      },
      { verdict: 'demoted self because DCS is not accessible and I was a leader', actions: ['demote'] },
    ],
    [
      'failsafe mode: a leader missing from /failsafe demotes',
      {
        cluster: null,
        config: { failsafe_mode: true },
        failsafeMembers: { n2: 'http://b' },
        local: { sample: primarySample(), role: 'primary', leadership: 'leader' },
      },
      { verdict: 'demoted self because DCS is not accessible and I was a leader', actions: ['demote'] },
    ],
    [
      'failsafe mode: the read answered but the lock refresh did not, the leader asks the members',
      {
        lockResult: 'dcs_unreachable',
        cluster: cluster({ leader: leaderKey('n1') }),
        config: { failsafe_mode: true },
        failsafeMembers: { n1: 'http://a', n2: 'http://b' },
        local: { sample: primarySample(), role: 'primary', leadership: 'leader' },
      },
      { need: 'failsafeRound' },
    ],
    [
      'failsafe mode: the refresh got no answer, every member accepted, the leader stays',
      {
        lockResult: 'dcs_unreachable',
        cluster: cluster({ leader: leaderKey('n1') }),
        config: { failsafe_mode: true },
        failsafeMembers: { n1: 'http://a', n2: 'http://b' },
        failsafeResult: { accepted: true, validUntil: 1, refusals: [] },
        local: { sample: primarySample(), role: 'primary', leadership: 'leader' },
      },
      {
        verdict: 'continue to run as a leader because failsafe mode is enabled and all members are accessible',
        actions: ['holdInFailsafe', 'keepSlotsInFailsafe'],
      },
    ],
    [
      'failsafe mode: the refresh got no answer, a member refused, the leader demotes',
      {
        lockResult: 'dcs_unreachable',
        cluster: cluster({ leader: leaderKey('n1') }),
        config: { failsafe_mode: true },
        failsafeMembers: { n1: 'http://a', n2: 'http://b' },
        failsafeResult: { accepted: false, validUntil: 1, refusals: ['n2'] },
        local: { sample: primarySample(), role: 'primary', leadership: 'leader' },
      },
      { verdict: 'demoted self because DCS is not accessible and I was a leader', actions: ['demote'] },
    ],
    [
      'failsafe mode: a replica that accepted a failsafe leader does not race',
      { cluster: cluster({ leader: null }), config: { failsafe_mode: true }, failsafeLeader: 'n2' },
      { verdict: 'following failsafe leader n2: it reached every member less than ttl ago', actions: [] },
    ],
    [
      'failsafe mode: a replica the failsafe leader never asked does not take over',
      {
        cluster: cluster({ leader: null }),
        config: { failsafe_mode: true },
        failsafeMembers: { n2: 'http://b', n3: 'http://c' },
        peers: [],
      },
      { verdict: 'following a different leader because i am not the healthiest node', actions: [] },
    ],

    // bootstrap
    [
      'an empty node of a new cluster races for initialize',
      {
        cluster: cluster({ initialize: null, members: [] }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'uninitialized',
          dataDir: { state: 'empty', standbySignal: false },
        },
      },
      { need: 'raceInitialize' },
    ],
    [
      'the winner of the initialize race runs initdb',
      {
        initializeResult: 'won',
        cluster: cluster({ initialize: null }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'uninitialized',
          dataDir: { state: 'empty', standbySignal: false },
        },
      },
      { verdict: 'trying to bootstrap a new cluster', actions: ['initdb'] },
    ],
    [
      'the loser of the initialize race waits',
      {
        initializeResult: 'lost',
        cluster: cluster({ initialize: null }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'uninitialized',
          dataDir: { state: 'empty', standbySignal: false },
        },
      },
      { verdict: 'failed to acquire initialize lock', actions: [] },
    ],
    [
      'a nofailover node never bootstraps a new cluster',
      {
        cluster: cluster({ initialize: null }),
        local: {
          tags: { nofailover: true },
          pgState: 'stopped',
          sample: null,
          dataDir: { state: 'empty', standbySignal: false },
        },
      },
      { verdict: 'waiting for leader to bootstrap', actions: [] },
    ],
    [
      'an empty node waits while initialize is taken and no leader exists',
      {
        cluster: cluster({ initialize: '' }),
        local: { pgState: 'stopped', sample: null, dataDir: { state: 'empty', standbySignal: false } },
      },
      { verdict: 'waiting for leader to bootstrap', actions: [] },
    ],
    [
      'an empty node clones from the leader',
      {
        cluster: cluster({ leader: leaderKey('n2') }),
        local: { pgState: 'stopped', sample: null, dataDir: { state: 'empty', standbySignal: false } },
      },
      { verdict: "trying to bootstrap from leader 'n2'", actions: ['clone'] },
    ],
    [
      'an empty node prefers a running clonefrom replica',
      {
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2'), member('n3', { tags: { clonefrom: true } })],
        }),
        local: { pgState: 'stopped', sample: null, dataDir: { state: 'empty', standbySignal: false } },
      },
      { verdict: "trying to bootstrap from replica 'n3'", actions: ['clone'] },
    ],
    [
      'after initdb the bootstrapper starts its primary',
      { local: { bootstrapping: true, pgState: 'stopped', sample: null, role: 'primary' } },
      { verdict: 'starting primary after bootstrap', actions: ['startPrimary'] },
    ],
    [
      'once running, the bootstrapper takes the cluster',
      { local: { bootstrapping: true, sample: primarySample(), role: 'primary' } },
      { verdict: 'initialized a new cluster', actions: ['finishBootstrap'] },
    ],
    [
      'a failed initdb gives the initialize key back',
      { local: { bootstrapping: true, pgState: 'initdb_failed', sample: null, lastError: 'disk full' } },
      {
        verdict: 'removing initialize key after failed attempt to bootstrap the cluster: disk full',
        actions: ['abandonBootstrap'],
      },
    ],
    [
      'the lock holder with an empty data directory lets the lock go',
      {
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { pgState: 'stopped', sample: null, dataDir: { state: 'empty', standbySignal: false } },
      },
      { verdict: 'released leader key voluntarily as data dir empty and currently leader', actions: ['releaseLock'] },
    ],

    // long actions
    [
      'a long action is reported and waited for',
      { cluster: cluster({ leader: leaderKey('n2') }), local: { busy: 'rejoin' } },
      { verdict: 'rejoin in progress', actions: [] },
    ],
    [
      'the lock holder keeps its lock during a long action',
      { cluster: cluster({ leader: leaderKey('n1') }), local: { busy: 'promote' } },
      { need: 'refreshLock' },
    ],

    // system id
    [
      'a data directory of another cluster is refused',
      { cluster: cluster({ initialize: '6999' }), local: { pgState: 'stopped', sample: null } },
      { actions: [] },
    ],

    // crash recovery
    [
      'the lock holder whose postmaster died asks to keep the lock first',
      {
        cluster: cluster({ leader: leaderKey('n1') }),
        local: {
          pgState: 'crashed',
          sample: null,
          role: 'primary',
          dataDir: { state: 'initialized', standbySignal: false, clusterState: 'in production' },
        },
      },
      { need: 'refreshLock' },
    ],
    [
      'the lock holder restarts its crashed primary in place',
      {
        lockResult: 'refreshed',
        cluster: cluster({ leader: leaderKey('n1') }),
        local: {
          pgState: 'crashed',
          sample: null,
          role: 'primary',
          dataDir: { state: 'initialized', standbySignal: false },
        },
      },
      { verdict: 'starting primary after failure', actions: ['startPrimary'] },
    ],
    [
      'with primary_start_timeout 0 the lock holder of a crashed primary fails over at once',
      {
        lockResult: 'refreshed',
        config: { primary_start_timeout: 0 },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: {
          pgState: 'crashed',
          sample: null,
          role: 'primary',
          dataDir: { state: 'initialized', standbySignal: false },
        },
      },
      { verdict: 'stopped PostgreSQL to fail over after a crash', actions: ['releaseLock'] },
    ],
    [
      'a crashed replica restarts following the leader',
      { cluster: cluster({ leader: leaderKey('n2') }), local: { pgState: 'crashed', sample: null } },
      { verdict: 'starting as a secondary', actions: ['startReplica'] },
    ],
    [
      'a former primary rejoins the new leader through pg_rewind',
      {
        cluster: cluster({ leader: leaderKey('n2') }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'demoted',
          dataDir: { state: 'initialized', standbySignal: false },
        },
      },
      { verdict: 'running pg_rewind from n2', actions: ['rejoin'] },
    ],
    [
      'a former primary whose rejoin could not run (the leader did not answer) waits a backoff, not the next cycle',
      {
        now: Date.parse('2026-01-01T00:00:00Z'),
        config: { loop_wait: 2 },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'demoted',
          dataDir: { state: 'initialized', standbySignal: false },
          lastTask: {
            name: 'rejoin',
            error: 'not rejoining n2 now: it does not accept connections; nothing was run',
            endedAt: Date.parse('2026-01-01T00:00:00Z') - 1000,
            failuresInRow: 2,
          },
        },
      },
      {
        verdict:
          'waiting 3 s before rejoining n2 again: not rejoining n2 now: it does not accept connections; nothing was run',
        actions: ['wakeAt'],
      },
    ],
    [
      'after the backoff it tries again',
      {
        now: Date.parse('2026-01-01T00:00:00Z'),
        config: { loop_wait: 2 },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'demoted',
          dataDir: { state: 'initialized', standbySignal: false },
          lastTask: {
            name: 'rejoin',
            error: 'not rejoining n2 now',
            endedAt: Date.parse('2026-01-01T00:00:00Z') - 5000,
            failuresInRow: 2,
          },
        },
      },
      { verdict: 'running pg_rewind from n2', actions: ['rejoin'] },
    ],
    [
      'a former primary waits for the new leader to checkpoint before pg_rewind',
      {
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2', { role: 'primary', checkpoint_after_promote: false }), member('n3')],
        }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'demoted',
          dataDir: { state: 'initialized', standbySignal: false },
        },
      },
      { verdict: 'waiting for the checkpoint after promote on n2 before pg_rewind', actions: ['wakeAt'] },
    ],
    [
      // Seen on a fast machine: the new leader drained its read pool before promoting, pg_rewind against it found
      // "no rewind required", and the former primary served WAL the new leader never had.
      'a former primary waits while the new leader holds the lock but has not promoted yet (its key says replica)',
      {
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2', { role: 'replica' }), member('n3')],
        }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'demoted',
          dataDir: { state: 'initialized', standbySignal: false },
        },
      },
      { verdict: 'waiting for n2 to finish its promotion before pg_rewind', actions: ['wakeAt'] },
    ],
    [
      'an empty node of a leaderless cluster restores from backup when a replica method needs no leader',
      {
        cluster: cluster({ leader: null }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'uninitialized',
          dataDir: { state: 'empty', standbySignal: false },
          canCloneWithoutLeader: true,
        },
      },
      { verdict: 'trying to bootstrap (without leader)', actions: ['clone'] },
    ],
    [
      'without such a method it waits for a leader',
      {
        cluster: cluster({ leader: null }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'uninitialized',
          dataDir: { state: 'empty', standbySignal: false },
        },
      },
      { verdict: 'waiting for leader to bootstrap', actions: [] },
    ],
    [
      'a stopped node of a leaderless cluster starts read-only',
      { cluster: cluster(), local: { pgState: 'stopped', sample: null } },
      { verdict: 'starting as a secondary', actions: ['startReplica'] },
    ],
    [
      'a paused lock holder whose postgres died releases the lock',
      {
        config: { pause: true },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { pgState: 'stopped', sample: null },
      },
      { verdict: 'removed leader lock because postgres is not running', actions: ['releaseLock'] },
    ],

    // leader race
    ['a replica of a leaderless cluster probes its peers first', {}, { need: 'probePeers' }],
    [
      'the healthiest replica goes for the lock',
      { peers: [{ name: 'n2', reachable: true, walPosition: 40_000_000 }] },
      { need: 'acquireLock' },
    ],
    [
      'the winner of the race promotes',
      { peers: [], lockResult: 'acquired' },
      { verdict: 'promoted self to leader by acquiring session lock', actions: ['promote'] },
    ],
    [
      'the winner promotes, then clears the failover request (beside the promotion, not before it)',
      {
        peers: [],
        lockResult: 'acquired',
        cluster: cluster({ failover: { value: { member: 'n1' }, modRevision: '9' } }),
      },
      { actions: ['promote', 'clearFailover'] },
    ],
    [
      'the loser of the race follows',
      { peers: [], lockResult: 'not_acquired' },
      { verdict: 'following new leader after trying and failing to obtain lock', actions: [] },
    ],
    [
      'a replica behind a peer does not race',
      { peers: [{ name: 'n2', reachable: true, walPosition: 60_000_000 }] },
      { verdict: 'following a different leader because i am not the healthiest node', actions: [] },
    ],
    [
      'a replica does not race while a primary is alive',
      { peers: [{ name: 'n2', reachable: true, isPrimary: true, walPosition: 1 }] },
      { verdict: 'following a different leader because i am not the healthiest node', actions: [] },
    ],
    [
      'a replica does not race while a primary tagged nofailover is alive (a failsafe leader tagged after it led)',
      { peers: [{ name: 'n2', reachable: true, isPrimary: true, walPosition: 1, tags: { nofailover: true } }] },
      { verdict: 'following a different leader because i am not the healthiest node', actions: [] },
    ],
    [
      'nor while a primary whose watchdog failed is alive',
      { peers: [{ name: 'n2', reachable: true, isPrimary: true, walPosition: 1, watchdogFailed: true }] },
      { verdict: 'following a different leader because i am not the healthiest node', actions: [] },
    ],
    ['an unreachable peer does not count', { peers: [{ name: 'n2', reachable: false }] }, { need: 'acquireLock' }],
    // after a whole-cluster restart the member that published the most WAL leads, or its key expires first
    [
      'an unreachable peer whose member key shows more WAL holds the race back',
      {
        peers: [{ name: 'n2', reachable: false }],
        cluster: cluster({
          members: [
            member('n1'),
            member('n2', { state: 'stopped', role: 'primary', xlog_location: 50_000_001, timeline: 1 }),
            member('n3'),
          ],
        }),
      },
      { verdict: 'following a different leader because i am not the healthiest node' },
    ],
    [
      'an unreachable peer whose member key shows as much WAL does not',
      {
        peers: [{ name: 'n2', reachable: false }],
        cluster: cluster({
          members: [member('n1'), member('n2', { xlog_location: 50_000_000, timeline: 1 }), member('n3')],
        }),
      },
      { need: 'acquireLock' },
    ],
    [
      'an unreachable peer ahead on an older timeline does not',
      {
        peers: [{ name: 'n2', reachable: false }],
        local: { sample: sample({ timeline: 2 }) },
        cluster: cluster({
          members: [member('n1'), member('n2', { xlog_location: 90_000_000, timeline: 1 }), member('n3')],
        }),
      },
      { need: 'acquireLock' },
    ],
    [
      'an unreachable nofailover peer ahead does not',
      {
        peers: [{ name: 'n2', reachable: false }],
        cluster: cluster({
          members: [
            member('n1'),
            member('n2', { xlog_location: 90_000_000, tags: { nofailover: true } }),
            member('n3'),
          ],
        }),
      },
      { need: 'acquireLock' },
    ],
    [
      'a nofailover peer does not count',
      { peers: [{ name: 'n2', reachable: true, walPosition: 90_000_000, tags: { nofailover: true } }] },
      { need: 'acquireLock' },
    ],
    [
      'equal WAL and a higher peer priority wins',
      { peers: [{ name: 'n2', reachable: true, walPosition: 50_000_000, tags: { failover_priority: 2 } }] },
      { verdict: 'following a different leader because i am not the healthiest node' },
    ],
    [
      'a nofailover node never races',
      { local: { tags: { nofailover: true } }, peers: [] },
      { verdict: 'following a different leader because I am not allowed to promote' },
    ],
    // watchdog mode required without a usable device (the reference's watchdog_failed)
    [
      'watchdog required but unusable: a node never races',
      { local: { watchdogFailed: 'cannot open /dev/watchdog: ENOENT' }, peers: [] },
      { verdict: 'following a different leader because i am not the healthiest node', actions: [] },
    ],
    [
      'watchdog required but unusable: a node never bootstraps a new cluster',
      {
        cluster: cluster({ initialize: null }),
        local: {
          watchdogFailed: 'cannot open /dev/watchdog: ENOENT',
          pgState: 'stopped',
          sample: null,
          dataDir: { state: 'empty', standbySignal: false },
        },
      },
      { verdict: 'waiting for leader to bootstrap', actions: [] },
    ],
    [
      'a peer whose watchdog failed does not hold the race back, however far ahead',
      { peers: [{ name: 'n2', reachable: true, walPosition: 90_000_000, watchdogFailed: true }] },
      { need: 'acquireLock' },
    ],
    [
      'a lock holder in recovery whose watchdog could not be activated gives the lock up',
      {
        lockResult: 'refreshed',
        local: { watchdogFailed: 'WDIOC_SETTIMEOUT failed' },
        cluster: cluster({ leader: leaderKey('n1') }),
      },
      { verdict: 'Not promoting self because watchdog could not be activated', actions: ['releaseLock'] },
    ],
    [
      'a primary whose watchdog could not be activated demotes, keeping the lock until PostgreSQL is down',
      {
        lockResult: 'refreshed',
        local: { watchdogFailed: 'WDIOC_SETTIMEOUT failed', sample: primarySample(), role: 'primary' },
        cluster: cluster({ leader: leaderKey('n1') }),
      },
      { verdict: 'Demoting self because watchdog could not be activated', actions: ['demote'] },
    ],
    [
      'while paused, a primary without its watchdog keeps running',
      {
        lockResult: 'refreshed',
        config: { pause: true },
        local: { watchdogFailed: 'WDIOC_SETTIMEOUT failed', sample: primarySample(), role: 'primary' },
        cluster: cluster({ leader: leaderKey('n1') }),
      },
      { verdict: 'no action. I am (n1), the leader with the lock', actions: ['leaderDuties'] },
    ],
    [
      'a replica beyond maximum_lag_on_failover does not race',
      { peers: [], cluster: cluster({ status: { value: { optime: 60_000_000 }, modRevision: '4' } }) },
      { verdict: 'following a different leader because i am not the healthiest node' },
    ],
    [
      'check_timeline keeps a replica on an old timeline out',
      {
        peers: [],
        config: { check_timeline: true },
        cluster: cluster({ history: { value: [[1, 100, 'no recovery target specified']], modRevision: '3' } }),
      },
      { verdict: 'following a different leader because i am not the healthiest node' },
    ],
    [
      'a running primary without a leader key takes the lock back',
      { local: { sample: primarySample(), role: 'primary' } },
      { need: 'acquireLock' },
    ],
    // Found by the model checker with the fence killed: a primary deciding on a read taken before another node won the key.
    [
      'a running primary that loses the race for the lock demotes itself',
      { lockResult: 'not_acquired', local: { sample: primarySample(), role: 'primary' } },
      { verdict: 'demoted self after trying and failing to obtain lock', actions: ['demote'] },
    ],
    [
      'paused, it keeps running',
      { lockResult: 'not_acquired', config: { pause: true }, local: { sample: primarySample(), role: 'primary' } },
      { verdict: 'following new leader after trying and failing to obtain lock', actions: [] },
    ],
    [
      'a running primary that regains the lock keeps running',
      { lockResult: 'acquired', local: { sample: primarySample(), role: 'primary' } },
      { verdict: 'acquired session lock as a leader', actions: ['leaderDuties'] },
    ],
    [
      'a primary on an old timeline demotes instead',
      {
        cluster: cluster({
          history: {
            value: [
              [1, 100, 'x'],
              [2, 200, 'y'],
            ],
            modRevision: '3',
          },
        }),
        local: { sample: primarySample({ timeline: 1 }), role: 'primary' },
      },
      { actions: ['demote'] },
    ],

    // healthy cluster, this node holds the lock
    [
      'the leader refreshes its lock',
      { cluster: cluster({ leader: leaderKey('n1') }), local: { sample: primarySample(), role: 'primary' } },
      { need: 'refreshLock' },
    ],
    [
      'the leader with a fresh lock does its duties',
      {
        lockResult: 'refreshed',
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'no action. I am (n1), the leader with the lock', actions: ['leaderDuties'] },
    ],
    [
      'a lock holder still in recovery but tagged nofailover since it won the race releases the lock (model check)',
      { lockResult: 'refreshed', local: { tags: { nofailover: true } }, cluster: cluster({ leader: leaderKey('n1') }) },
      { verdict: 'released leader key because I am not allowed to promote (nofailover)', actions: ['releaseLock'] },
    ],
    [
      'a lock holder still in recovery promotes',
      { lockResult: 'refreshed', cluster: cluster({ leader: leaderKey('n1') }) },
      { verdict: 'promoted self to leader because I had the session lock', actions: ['promote'] },
    ],

    // standby cluster: the leader streams from the remote primary instead of promoting
    [
      "the winner of a standby cluster's initialize race clones the remote primary",
      {
        initializeResult: 'won',
        config: { standby_cluster: remoteMain },
        cluster: cluster({ initialize: null }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'uninitialized',
          dataDir: { state: 'empty', standbySignal: false },
        },
      },
      { verdict: 'trying to bootstrap a new standby leader', actions: ['bootstrapStandbyLeader'] },
    ],
    [
      "an archive-only standby cluster's winner builds its leader from the archive",
      {
        initializeResult: 'won',
        config: { standby_cluster: { ...remoteMain, host: null, restore_command: 'cp /archive/%f %p' } },
        cluster: cluster({ initialize: null }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'uninitialized',
          dataDir: { state: 'empty', standbySignal: false },
        },
      },
      { verdict: 'trying to bootstrap a new standby leader', actions: ['bootstrapStandbyLeader'] },
    ],
    [
      'a failed standby bootstrap waits a backoff before racing again',
      {
        config: { standby_cluster: remoteMain, loop_wait: 2 },
        cluster: cluster({ initialize: null }),
        local: {
          pgState: 'stopped',
          sample: null,
          role: 'uninitialized',
          dataDir: { state: 'empty', standbySignal: false },
          lastTask: {
            name: 'bootstrap_standby_leader',
            error: 'could not clone the remote primary',
            endedAt: Date.parse('2026-01-01T00:00:00Z') - 1000,
            failuresInRow: 1,
          },
        },
      },
      {
        verdict: 'waiting 1 s before bootstrapping the standby leader again: could not clone the remote primary',
        actions: ['wakeAt'],
      },
    ],
    [
      "a standby cluster's empty member waits for the standby leader",
      {
        config: { standby_cluster: remoteMain },
        cluster: cluster({ initialize: '' }),
        local: { pgState: 'stopped', sample: null, dataDir: { state: 'empty', standbySignal: false } },
      },
      { verdict: 'waiting for standby_leader to bootstrap', actions: [] },
    ],
    [
      'the lock holder of a standby cluster follows the remote primary, not promoting',
      {
        lockResult: 'refreshed',
        config: { standby_cluster: remoteMain },
        cluster: cluster({ leader: leaderKey('n1') }),
      },
      {
        verdict: 'no action. I am (n1), the standby leader with the lock',
        actions: ['follow', 'becomeStandbyLeader', 'leaderDuties'],
      },
    ],
    [
      'a lock holder that finds no /config (its cluster adopted an existing data directory) writes its own first',
      {
        lockResult: 'refreshed',
        config: { standby_cluster: remoteMain },
        cluster: cluster({ leader: leaderKey('n1'), config: null }),
      },
      {
        verdict: 'no action. I am (n1), the standby leader with the lock',
        actions: ['writeConfig', 'follow', 'becomeStandbyLeader', 'leaderDuties'],
      },
    ],
    [
      'a standby leader already streaming from the remote just keeps its duties',
      {
        lockResult: 'refreshed',
        config: { standby_cluster: remoteMain },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { role: 'standby_leader', upstream: 'remote 10.0.0.9:5432' },
      },
      { verdict: 'no action. I am (n1), the standby leader with the lock', actions: ['leaderDuties'] },
    ],
    [
      "the winner of a standby cluster's leader race becomes the standby leader",
      { peers: [], lockResult: 'acquired', config: { standby_cluster: remoteMain } },
      {
        verdict: 'promoted self to a standby leader by acquiring session lock',
        actions: ['follow', 'becomeStandbyLeader'],
      },
    ],
    [
      'a primary lock holder told it is an archive-only standby cluster demotes into archive recovery, keeping the lock (demote-cluster)',
      {
        lockResult: 'refreshed',
        config: { standby_cluster: { ...remoteMain, host: null, restore_command: 'cp /archive/%f %p' } },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { sample: primarySample(), role: 'primary' },
      },
      {
        verdict: 'converting to a standby cluster: demoting self to restore WAL from the archive (demote-cluster)',
        actions: ['demoteToArchive'],
      },
    ],
    [
      'a primary lock holder whose standby_cluster has only a port stays primary and says why',
      {
        lockResult: 'refreshed',
        config: { standby_cluster: { ...remoteMain, host: null } },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { sample: primarySample(), role: 'primary' },
      },
      {
        verdict:
          'no action. I am (n1), the leader with the lock; standby_cluster names neither a host nor a restore_command, so there is nothing to follow',
        actions: ['leaderDuties'],
      },
    ],
    [
      'the archive-only standby leader after demote-cluster restores from the archive, not promoting',
      {
        lockResult: 'refreshed',
        config: { standby_cluster: { ...remoteMain, host: null, restore_command: 'cp /archive/%f %p' } },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { role: 'standby_leader', upstream: 'remote archive' },
      },
      { verdict: 'no action. I am (n1), the standby leader with the lock', actions: ['leaderDuties'] },
    ],
    [
      'a replica of a cluster being demoted keeps following its lock holder, not racing',
      {
        config: { standby_cluster: { ...remoteMain, host: null, restore_command: 'cp /archive/%f %p' } },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: { upstream: 'n2' },
      },
      { verdict: 'no action. I am (n1), a secondary, and following a leader (n2)', actions: ['serveDownstreams'] },
    ],
    [
      'a primary lock holder told it is a standby cluster demotes to follow the remote, keeping the lock',
      {
        lockResult: 'refreshed',
        config: { standby_cluster: remoteMain },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { sample: primarySample(), role: 'primary' },
      },
      {
        verdict: 'converting to a standby cluster: demoting self to follow the remote primary 10.0.0.9:5432',
        actions: ['demote'],
      },
    ],
    [
      'a primary that cannot refresh its lock demotes',
      {
        lockResult: 'refresh_failed',
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'demoted self because failed to update leader lock in DCS', actions: ['demote'] },
    ],
    [
      'a paused primary that cannot refresh keeps running',
      {
        lockResult: 'refresh_failed',
        config: { pause: true },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'continue to run as primary after failing to update leader lock in DCS', actions: [] },
    ],
    [
      'a replica holding the key that cannot refresh does not promote',
      { lockResult: 'refresh_failed', cluster: cluster({ leader: leaderKey('n1') }) },
      { verdict: 'not promoting because failed to update leader lock in DCS', actions: [] },
    ],

    // switchover and manual failover, leader side (reference 3.6, 3.7)
    [
      'the leader asked to switch over probes the candidates',
      {
        lockResult: 'refreshed',
        cluster: cluster({
          leader: leaderKey('n1'),
          failover: { value: { leader: 'n1', member: 'n2' }, modRevision: '9' },
        }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { need: 'probePeers' },
    ],
    [
      'the leader demotes itself gracefully for a healthy candidate',
      {
        lockResult: 'refreshed',
        peers: [{ name: 'n2', reachable: true, walPosition: 50_000_000 }],
        cluster: cluster({
          leader: leaderKey('n1'),
          failover: { value: { leader: 'n1', member: 'n2' }, modRevision: '9' },
        }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'switchover: demoting myself', actions: ['demoteGraceful'] },
    ],
    [
      'the leader keeps leading when the candidate is unreachable',
      {
        lockResult: 'refreshed',
        peers: [{ name: 'n2', reachable: false }],
        cluster: cluster({
          leader: leaderKey('n1'),
          failover: { value: { leader: 'n1', member: 'n2' }, modRevision: '9' },
        }),
        local: { sample: primarySample(), role: 'primary' },
      },
      {
        verdict: 'switchover: no healthy members found, switchover is not possible',
        actions: ['clearFailover', 'leaderDuties'],
      },
    ],
    [
      'a manual failover to a nofailover member is not possible',
      {
        lockResult: 'refreshed',
        peers: [{ name: 'n2', reachable: true, walPosition: 50_000_000, tags: { nofailover: true } }],
        cluster: cluster({ leader: leaderKey('n1'), failover: { value: { member: 'n2' }, modRevision: '9' } }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'manual failover: no healthy members found, manual failover is not possible' },
    ],
    [
      'a manual failover to a member whose watchdog failed is not possible',
      {
        lockResult: 'refreshed',
        peers: [{ name: 'n2', reachable: true, walPosition: 50_000_000, watchdogFailed: true }],
        cluster: cluster({ leader: leaderKey('n1'), failover: { value: { member: 'n2' }, modRevision: '9' } }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'manual failover: no healthy members found, manual failover is not possible' },
    ],
    [
      'a failover to the leader itself is cleaned up',
      {
        lockResult: 'refreshed',
        cluster: cluster({ leader: leaderKey('n1'), failover: { value: { member: 'n1' }, modRevision: '9' } }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'I am already the leader, no need to manual failover', actions: ['clearFailover', 'leaderDuties'] },
    ],
    [
      'a switchover from another leader is cleaned up',
      {
        lockResult: 'refreshed',
        cluster: cluster({
          leader: leaderKey('n1'),
          failover: { value: { leader: 'n3', member: 'n2' }, modRevision: '9' },
        }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'switchover: leader name does not match: n3 != n1', actions: ['clearFailover', 'leaderDuties'] },
    ],
    [
      'a scheduled switchover is awaited and the loop wakes at its time',
      {
        now: Date.parse('2026-06-01T12:00:00Z'),
        lockResult: 'refreshed',
        cluster: cluster({
          leader: leaderKey('n1'),
          failover: { value: { leader: 'n1', scheduled_at: '2026-06-01T14:00:30+02:00' }, modRevision: '9' },
        }),
        local: { sample: primarySample(), role: 'primary' },
      },
      {
        verdict: 'Awaiting switchover at 2026-06-01T14:00:30+02:00 (in 30 seconds)',
        actions: ['leaderDuties', 'wakeAt'],
      },
    ],
    [
      'a scheduled switchover that is due runs',
      {
        now: Date.parse('2026-06-01T12:00:31Z'),
        lockResult: 'refreshed',
        peers: [{ name: 'n2', reachable: true, walPosition: 50_000_000 }],
        cluster: cluster({
          leader: leaderKey('n1'),
          failover: { value: { leader: 'n1', scheduled_at: '2026-06-01T14:00:30+02:00' }, modRevision: '9' },
        }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'switchover: demoting myself' },
    ],
    [
      'a scheduled switchover long past is stale',
      {
        now: Date.parse('2026-06-01T12:10:00Z'),
        lockResult: 'refreshed',
        cluster: cluster({
          leader: leaderKey('n1'),
          failover: { value: { leader: 'n1', scheduled_at: '2026-06-01T14:00:30+02:00' }, modRevision: '9' },
        }),
        local: { sample: primarySample(), role: 'primary' },
      },
      {
        verdict: 'Found a stale switchover value, cleaning up: 2026-06-01T14:00:30+02:00',
        actions: ['clearFailover', 'leaderDuties'],
      },
    ],
    [
      'a scheduled switchover waits while paused',
      {
        now: Date.parse('2026-06-01T12:00:31Z'),
        config: { pause: true },
        lockResult: 'refreshed',
        cluster: cluster({
          leader: leaderKey('n1'),
          failover: { value: { leader: 'n1', scheduled_at: '2026-06-01T14:00:30+02:00' }, modRevision: '9' },
        }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'no action. I am (n1), the leader with the lock' },
    ],

    // switchover and manual failover, candidate side
    [
      'the named candidate takes the lock whatever its lag',
      {
        peers: [{ name: 'n2', reachable: true, walPosition: 90_000_000 }],
        cluster: cluster({
          failover: { value: { leader: 'n3', member: 'n1' }, modRevision: '9' },
          status: { value: { optime: 99_000_000 }, modRevision: '4' },
        }),
      },
      { need: 'acquireLock' },
    ],
    [
      // As the reference's manual_failover_process_no_leader: no call to the others, which a busy machine may not answer
      // within the probe's 2 s (the switchover storm at N = 10, issue 35).
      'the named candidate races for the lock without probing its peers first',
      {
        cluster: cluster({ failover: { value: { leader: 'n3', member: 'n1' }, modRevision: '9' } }),
      },
      { need: 'acquireLock' },
    ],
    [
      '... and so after a failover naming it, with no leader named',
      {
        cluster: cluster({ failover: { value: { member: 'n1' }, modRevision: '9' } }),
      },
      { need: 'acquireLock' },
    ],
    [
      '... not when the failover names another member: the others are asked',
      {
        cluster: cluster({ failover: { value: { leader: 'n3', member: 'n2' }, modRevision: '9' } }),
      },
      { need: 'probePeers' },
    ],
    [
      '... nor a scheduled one still ahead',
      {
        cluster: cluster({
          failover: {
            value: { leader: 'n3', member: 'n1', scheduled_at: '2999-01-01T00:00:00+00:00' },
            modRevision: '9',
          },
        }),
      },
      { need: 'probePeers' },
    ],
    [
      'a named candidate tagged nofailover after the request never takes the lock (model check)',
      {
        local: { tags: { nofailover: true } },
        peers: [],
        cluster: cluster({ failover: { value: { leader: 'n3', member: 'n1' }, modRevision: '9' } }),
      },
      { verdict: 'following a different leader because I am not allowed to promote' },
    ],
    [
      'another member waits for the named candidate',
      {
        peers: [{ name: 'n2', reachable: true, walPosition: 1 }],
        cluster: cluster({ failover: { value: { leader: 'n3', member: 'n2' }, modRevision: '9' } }),
      },
      { verdict: 'following a different leader because i am not the healthiest node' },
    ],
    [
      'an unreachable named candidate leaves the race open',
      {
        peers: [{ name: 'n2', reachable: false }],
        cluster: cluster({ failover: { value: { leader: 'n3', member: 'n2' }, modRevision: '9' } }),
      },
      { need: 'acquireLock' },
    ],
    [
      'the leader that stepped down does not take the lock back',
      {
        peers: [{ name: 'n2', reachable: true, walPosition: 50_000_000 }],
        cluster: cluster({ failover: { value: { leader: 'n1' }, modRevision: '9' } }),
      },
      { verdict: 'following a different leader because i am not the healthiest node' },
    ],
    [
      'a former leader ahead of the others is ignored in a switchover race',
      {
        local: { name: 'n2' },
        peers: [{ name: 'n1', reachable: true, walPosition: 60_000_000 }],
        cluster: cluster({ failover: { value: { leader: 'n1' }, modRevision: '9' } }),
      },
      { need: 'acquireLock' },
    ],

    // healthy cluster, another node holds the lock
    // a replica keeps slots for the members cascading from it (none here), checked every cycle
    [
      'a replica following the leader does nothing else',
      { cluster: cluster({ leader: leaderKey('n2') }), local: { upstream: 'n2' } },
      { verdict: 'no action. I am (n1), a secondary, and following a leader (n2)', actions: ['serveDownstreams'] },
    ],
    [
      'a replica following someone else switches upstream',
      { cluster: cluster({ leader: leaderKey('n2') }), local: { upstream: 'n3' } },
      {
        verdict: 'no action. I am (n1), a secondary, and following a leader (n2)',
        actions: ['follow', 'serveDownstreams'],
      },
    ],
    [
      'without slots a replica keeps none',
      { config: { use_slots: false }, cluster: cluster({ leader: leaderKey('n2') }), local: { upstream: 'n2' } },
      { actions: [] },
    ],
    // cascading (replicatefrom, nostream)
    [
      'a replicatefrom replica streams from the member it names',
      { cluster: cluster({ leader: leaderKey('n2') }), local: { upstream: 'n2', tags: { replicatefrom: 'n3' } } },
      {
        verdict: 'no action. I am (n1), a secondary, and following a leader (n2) through n3',
        actions: ['follow', 'serveDownstreams'],
      },
    ],
    [
      'a replicatefrom replica already on its member stays',
      { cluster: cluster({ leader: leaderKey('n2') }), local: { upstream: 'n3', tags: { replicatefrom: 'n3' } } },
      { actions: ['serveDownstreams'] },
    ],
    [
      'a replicatefrom replica whose member is down follows the leader',
      {
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2'), member('n3', { state: 'stopped' })],
        }),
        local: { upstream: 'n3', tags: { replicatefrom: 'n3' } },
      },
      {
        verdict: 'no action. I am (n1), a secondary, and following a leader (n2)',
        actions: ['follow', 'serveDownstreams'],
      },
    ],
    [
      'a replicatefrom replica whose member left follows the leader',
      {
        cluster: cluster({ leader: leaderKey('n2'), members: [member('n1'), member('n2')] }),
        local: { upstream: 'n3', tags: { replicatefrom: 'n3' } },
      },
      { actions: ['follow', 'serveDownstreams'] },
    ],
    [
      'a nostream replica streams from nobody',
      { cluster: cluster({ leader: leaderKey('n2') }), local: { upstream: null, tags: { nostream: true } } },
      { actions: ['serveDownstreams'] },
    ],
    [
      'a crashed replicatefrom replica starts from its member',
      {
        cluster: cluster({ leader: leaderKey('n2') }),
        local: { pgState: 'crashed', sample: null, tags: { replicatefrom: 'n3' } },
      },
      { verdict: 'starting as a secondary', actions: ['startReplica'] },
    ],
    [
      'a replica that cannot stream from a leader on a newer timeline for longer than ttl rewinds',
      {
        now: 100_000,
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2', { timeline: 2 }), member('n3')],
        }),
        local: {
          upstream: 'n2',
          notStreamingSince: 60_000,
          sample: { ...snapshot().local.sample!, replicationState: null, timeline: 1 },
        },
      },
      { actions: ['rewindReplica'] },
    ],
    [
      'a replica whose WAL goes past where the history ends its timeline rewinds at once',
      {
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2', { timeline: 2 }), member('n3')],
          history: {
            value: [[1, 49_999_000, 'no recovery target specified', '2026-11-25T12:00:00+00:00', 'n2']],
            modRevision: '7',
          },
        }),
        local: { upstream: 'n2', sample: { ...snapshot().local.sample!, timeline: 1 } },
      },
      {
        verdict:
          "my WAL goes on past the point where the cluster's history ends timeline 1: rejoining n2 through pg_rewind",
        actions: ['rewindReplica'],
      },
    ],
    [
      'a replica whose rewind could not run (the leader did not answer) waits a backoff before the next',
      {
        config: { loop_wait: 2 },
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2', { timeline: 2 }), member('n3')],
          history: {
            value: [[1, 49_999_000, 'no recovery target specified', '2026-11-25T12:00:00+00:00', 'n2']],
            modRevision: '7',
          },
        }),
        now: Date.parse('2026-01-01T00:00:00Z'),
        local: {
          upstream: 'n2',
          sample: { ...snapshot().local.sample!, timeline: 1 },
          lastTask: {
            name: 'rejoin',
            error: 'not rewinding from n2 now: it does not accept connections; nothing was run',
            endedAt: Date.parse('2026-01-01T00:00:00Z') - 1000,
            failuresInRow: 1,
          },
        },
      },
      {
        verdict:
          'waiting 1 s before rejoining n2 again: not rewinding from n2 now: it does not accept connections; nothing was run',
        actions: ['wakeAt'],
      },
    ],
    [
      'a replica of an older timeline up to the switch point follows: it can',
      {
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2', { timeline: 2 }), member('n3')],
          history: {
            value: [[1, 50_000_000, 'no recovery target specified', '2026-11-25T12:00:00+00:00', 'n2']],
            modRevision: '7',
          },
        }),
        local: { upstream: 'n2', sample: { ...snapshot().local.sample!, timeline: 1 } },
      },
      { actions: ['serveDownstreams'] },
    ],
    [
      'a replica not streaming for less than ttl waits: the leader may be dying',
      {
        now: 100_000,
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2', { timeline: 2 }), member('n3')],
        }),
        local: {
          upstream: 'n2',
          notStreamingSince: 80_000,
          sample: { ...snapshot().local.sample!, replicationState: null, timeline: 1 },
        },
      },
      { actions: ['serveDownstreams'] },
    ],
    [
      'a replica briefly not streaming is left alone',
      {
        now: 100_000,
        cluster: cluster({
          leader: leaderKey('n2'),
          members: [member('n1'), member('n2', { timeline: 2 }), member('n3')],
        }),
        local: {
          upstream: 'n2',
          notStreamingSince: 95_000,
          sample: { ...snapshot().local.sample!, replicationState: null, timeline: 1 },
        },
      },
      { actions: ['serveDownstreams'] },
    ],
    [
      'a primary without the lock demotes and follows',
      { cluster: cluster({ leader: leaderKey('n2') }), local: { sample: primarySample(), role: 'primary' } },
      { verdict: 'demoting self because I do not have the lock and I was a leader', actions: ['demote'] },
    ],
    [
      'a paused primary without the lock keeps running',
      {
        config: { pause: true },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: { sample: primarySample(), role: 'primary' },
      },
      { verdict: 'continue to run as primary without lock', actions: [] },
    ],
  ];

  it.each(rows)('%s', (_description, input, expected) => {
    const result = summarize(decide(snapshot(input)));
    expect(result).toMatchObject(expected);
  });

  it.each([
    [
      'without failsafe mode',
      { cluster: null, dcsError: 'timeout', local: { sample: primarySample(), role: 'primary' as const } },
    ],
    [
      'with failsafe mode, a member not answering',
      {
        cluster: null,
        config: { failsafe_mode: true },
        failsafeMembers: { n1: 'http://a', n2: 'http://b' },
        failsafeResult: { accepted: false, validUntil: 1, refusals: ['n2'] },
        local: { sample: primarySample(), role: 'primary' as const, leadership: 'leader' as const },
      },
    ],
  ])(
    "a primary that lost the DCS %s restarts read-only with no upstream (the reference's offline demote)",
    (_case, input) => {
      const decision = decide(snapshot(input));
      expect('actions' in decision && decision.actions).toEqual([
        { type: 'demote', mode: 'fast', restart: true, upstream: null },
      ]);
    },
  );

  it('a demoting primary follows the new leader after the restart', () => {
    const decision = decide(
      snapshot({ cluster: cluster({ leader: leaderKey('n2') }), local: { sample: primarySample(), role: 'primary' } }),
    );
    expect(decision).toEqual({
      verdict: 'demoting self because I do not have the lock and I was a leader',
      actions: [{ type: 'demote', mode: 'immediate', restart: true, upstream: upstreamN2 }],
    });
  });

  it('a crashed replicatefrom replica starts streaming from its member, not the leader', () => {
    const decision = decide(
      snapshot({
        cluster: cluster({ leader: leaderKey('n2') }),
        local: { pgState: 'crashed', sample: null, tags: { replicatefrom: 'n3' } },
      }),
    );
    expect(decision).toMatchObject({ actions: [{ type: 'startReplica', upstream: { name: 'n3' } }] });
  });

  it('keeps slots on the leader for the members streaming from it, and on a replica for those cascading from it', () => {
    const view = cluster({
      leader: leaderKey('n1'),
      members: [
        member('n1'),
        member('n2'),
        member('n3', { tags: { replicatefrom: 'n2' } }),
        member('n4', { tags: { replicatefrom: 'gone' } }),
        member('n5', { tags: { nostream: true } }),
      ],
    });
    expect(downstreamMembers(view, 'n1', true)).toEqual(['n2', 'n4']);
    expect(downstreamMembers(view, 'n2', false)).toEqual(['n3']);
    expect(downstreamMembers(view, 'n3', false)).toEqual([]);
  });

  it('adopts an existing data directory by writing initialize when the key is missing', () => {
    const decision = decide(
      snapshot({ cluster: cluster({ initialize: null }), local: { pgState: 'stopped', sample: null } }),
    );
    expect(summarize(decision)).toEqual({
      verdict: 'starting as a secondary',
      actions: ['writeInitialize', 'startReplica'],
    });
  });

  it('names both system identifiers when the data directory belongs elsewhere', () => {
    const decision = decide(
      snapshot({ cluster: cluster({ initialize: '6999' }), local: { pgState: 'stopped', sample: null } }),
    );
    expect('verdict' in decision && decision.verdict).toContain('6999');
    expect('verdict' in decision && decision.verdict).toContain('7000000000000000001');
  });
});
