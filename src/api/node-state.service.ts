import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { NodeView } from '../ha/node-view';
import { ApiIdentity, buildStatusDocument } from './status-document';
import { StatusBody } from './status-body';

/** What the API reads: the node's in-memory view. Implemented by HaNode. */
export interface NodeViewSource {
  view(): NodeView;
}

export const NODE_VIEW_SOURCE = Symbol('NodeViewSource');
export const API_IDENTITY = Symbol('ApiIdentity');
export const API_CLOCK = Symbol('ApiClock');

/** Answers status reads from memory: no SQL, no DCS round trip. */
@Injectable()
export class NodeStateService {
  private readonly body: StatusBody;

  constructor(
    @Inject(NODE_VIEW_SOURCE) private readonly source: NodeViewSource,
    @Inject(API_IDENTITY) readonly identity: ApiIdentity,
    @Inject(API_CLOCK) private readonly clock: Clock,
  ) {
    this.body = new StatusBody(identity);
  }

  view(): NodeView {
    return this.source.view();
  }

  now(): number {
    return this.clock.now();
  }

  statusDocument(view = this.view()): Record<string, unknown> {
    return buildStatusDocument(view, this.identity, this.clock.now());
  }

  /** The status document as JSON bytes, serialised again only when what it shows changed (status-body.ts). */
  statusBody(view: NodeView, now: number): Buffer {
    return this.body.of(view, now);
  }
}
