import { NodeView } from '../ha/node-view';
import { isUnresponsive, unresponsiveForMs } from '../ha/unresponsive';
import { ApiIdentity, buildStatusDocument, clusterViewIsFresh } from './status-document';

/**
 * The status document as the bytes a health GET answers, serialised once per change of what it shows
 * rather than once per request: a load balancer's checks ask thousands of times between two samples.
 * The node replaces (never edits) its sample, cluster view, settings and tags, so comparing them by
 * identity, with the clock-derived parts of the document (freshness, unresponsiveness, whole seconds
 * shown), tells whether the last bytes still hold.
 */
export class StatusBody {
  private inputs: unknown[] = [];
  private bytes: Buffer = Buffer.alloc(0);

  constructor(private readonly identity: ApiIdentity) {}

  of(view: NodeView, now: number): Buffer {
    const inputs = documentInputs(view, now);
    if (!sameInputs(inputs, this.inputs)) {
      this.inputs = inputs;
      this.bytes = Buffer.from(JSON.stringify(buildStatusDocument(view, this.identity, now)));
    }
    return this.bytes;
  }
}

/** Everything buildStatusDocument reads, as it reads it (keep the two in step). */
function documentInputs(view: NodeView, now: number): unknown[] {
  const unresponsive = isUnresponsive(
    unresponsiveForMs(view.pgState, view.pgAnsweredAt, now),
    view.config.postgres_unresponsive_timeout,
  );
  return [
    view.name,
    view.pgState,
    view.role,
    view.sample,
    view.cluster,
    view.config,
    view.tags,
    view.dataDir,
    view.site,
    view.scheduledRestart,
    view.failsafeActive,
    view.watchdogFailed,
    clusterViewIsFresh(view, now),
    Math.floor(view.dcsLastSeen / 1000),
    unresponsive ? Math.floor((now - view.sampleAt) / 1000) : -1,
  ];
}

function sameInputs(a: unknown[], b: unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
