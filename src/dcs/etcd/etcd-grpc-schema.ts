import type { fromJSON } from '@grpc/proto-loader';

/**
 * The part of etcd v3's gRPC API that Stator calls (KV, Watch, Lease, Auth.Authenticate), as a
 * protobufjs JSON descriptor: the message and field numbers of etcd's `rpc.proto` and `kv.proto`,
 * only the fields Stator reads or writes. Unknown fields in etcd's answers are skipped by protobuf.
 */
const field = (type: string, id: number, rule?: 'repeated') => ({ type, id, ...(rule ? { rule } : {}) });
const header = field('ResponseHeader', 1);
const unary = (requestType: string, responseType: string) => ({ requestType, responseType, comment: '' });
const streaming = (requestType: string, responseType: string) => ({
  requestType,
  responseType,
  requestStream: true,
  responseStream: true,
  comment: '',
});

export const ETCD_GRPC_SCHEMA: Parameters<typeof fromJSON>[0] = {
  nested: {
    mvccpb: {
      nested: {
        KeyValue: {
          fields: {
            key: field('bytes', 1),
            create_revision: field('int64', 2),
            mod_revision: field('int64', 3),
            version: field('int64', 4),
            value: field('bytes', 5),
            lease: field('int64', 6),
          },
        },
        Event: {
          fields: { type: field('EventType', 1), kv: field('KeyValue', 2), prev_kv: field('KeyValue', 3) },
          nested: { EventType: { values: { PUT: 0, DELETE: 1 } } },
        },
      },
    },
    etcdserverpb: {
      nested: {
        KV: {
          methods: {
            Range: unary('RangeRequest', 'RangeResponse'),
            Put: unary('PutRequest', 'PutResponse'),
            DeleteRange: unary('DeleteRangeRequest', 'DeleteRangeResponse'),
            Txn: unary('TxnRequest', 'TxnResponse'),
          },
        },
        Watch: { methods: { Watch: streaming('WatchRequest', 'WatchResponse') } },
        Lease: {
          methods: {
            LeaseGrant: unary('LeaseGrantRequest', 'LeaseGrantResponse'),
            LeaseRevoke: unary('LeaseRevokeRequest', 'LeaseRevokeResponse'),
            LeaseKeepAlive: streaming('LeaseKeepAliveRequest', 'LeaseKeepAliveResponse'),
          },
        },
        Auth: { methods: { Authenticate: unary('AuthenticateRequest', 'AuthenticateResponse') } },
        Maintenance: { methods: { Status: unary('StatusRequest', 'StatusResponse') } },

        ResponseHeader: {
          fields: {
            cluster_id: field('uint64', 1),
            member_id: field('uint64', 2),
            revision: field('int64', 3),
            raft_term: field('uint64', 4),
          },
        },
        RangeRequest: {
          fields: {
            key: field('bytes', 1),
            range_end: field('bytes', 2),
            limit: field('int64', 3),
            revision: field('int64', 4),
            sort_order: field('SortOrder', 5),
            sort_target: field('SortTarget', 6),
            serializable: field('bool', 7),
            keys_only: field('bool', 8),
            count_only: field('bool', 9),
            min_mod_revision: field('int64', 10),
          },
          nested: {
            SortOrder: { values: { NONE: 0, ASCEND: 1, DESCEND: 2 } },
            SortTarget: { values: { KEY: 0, VERSION: 1, CREATE: 2, MOD: 3, VALUE: 4 } },
          },
        },
        RangeResponse: {
          fields: {
            header,
            kvs: field('mvccpb.KeyValue', 2, 'repeated'),
            more: field('bool', 3),
            count: field('int64', 4),
          },
        },
        PutRequest: {
          fields: {
            key: field('bytes', 1),
            value: field('bytes', 2),
            lease: field('int64', 3),
            prev_kv: field('bool', 4),
          },
        },
        PutResponse: { fields: { header } },
        DeleteRangeRequest: {
          fields: { key: field('bytes', 1), range_end: field('bytes', 2), prev_kv: field('bool', 3) },
        },
        DeleteRangeResponse: { fields: { header, deleted: field('int64', 2) } },
        RequestOp: {
          oneofs: { request: { oneof: ['request_range', 'request_put', 'request_delete_range'] } },
          fields: {
            request_range: field('RangeRequest', 1),
            request_put: field('PutRequest', 2),
            request_delete_range: field('DeleteRangeRequest', 3),
          },
        },
        ResponseOp: {
          oneofs: { response: { oneof: ['response_range', 'response_put', 'response_delete_range'] } },
          fields: {
            response_range: field('RangeResponse', 1),
            response_put: field('PutResponse', 2),
            response_delete_range: field('DeleteRangeResponse', 3),
          },
        },
        Compare: {
          oneofs: { target_union: { oneof: ['version', 'create_revision', 'mod_revision', 'value', 'lease'] } },
          fields: {
            result: field('CompareResult', 1),
            target: field('CompareTarget', 2),
            key: field('bytes', 3),
            version: field('int64', 4),
            create_revision: field('int64', 5),
            mod_revision: field('int64', 6),
            value: field('bytes', 7),
            lease: field('int64', 8),
            range_end: field('bytes', 64),
          },
          nested: {
            CompareResult: { values: { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 } },
            CompareTarget: { values: { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 } },
          },
        },
        TxnRequest: {
          fields: {
            compare: field('Compare', 1, 'repeated'),
            success: field('RequestOp', 2, 'repeated'),
            failure: field('RequestOp', 3, 'repeated'),
          },
        },
        TxnResponse: { fields: { header, succeeded: field('bool', 2), responses: field('ResponseOp', 3, 'repeated') } },
        WatchRequest: {
          oneofs: { request_union: { oneof: ['create_request', 'cancel_request'] } },
          fields: { create_request: field('WatchCreateRequest', 1), cancel_request: field('WatchCancelRequest', 2) },
        },
        WatchCreateRequest: {
          fields: {
            key: field('bytes', 1),
            range_end: field('bytes', 2),
            start_revision: field('int64', 3),
            progress_notify: field('bool', 4),
            prev_kv: field('bool', 6),
          },
        },
        WatchCancelRequest: { fields: { watch_id: field('int64', 1) } },
        WatchResponse: {
          fields: {
            header,
            watch_id: field('int64', 2),
            created: field('bool', 3),
            canceled: field('bool', 4),
            compact_revision: field('int64', 5),
            cancel_reason: field('string', 6),
            fragment: field('bool', 7),
            events: field('mvccpb.Event', 11, 'repeated'),
          },
        },
        LeaseGrantRequest: { fields: { TTL: field('int64', 1), ID: field('int64', 2) } },
        LeaseGrantResponse: {
          fields: { header, ID: field('int64', 2), TTL: field('int64', 3), error: field('string', 4) },
        },
        LeaseRevokeRequest: { fields: { ID: field('int64', 1) } },
        LeaseRevokeResponse: { fields: { header } },
        LeaseKeepAliveRequest: { fields: { ID: field('int64', 1) } },
        LeaseKeepAliveResponse: { fields: { header, ID: field('int64', 2), TTL: field('int64', 3) } },
        AuthenticateRequest: { fields: { name: field('string', 1), password: field('string', 2) } },
        AuthenticateResponse: { fields: { header, token: field('string', 2) } },
        StatusRequest: { fields: {} },
        StatusResponse: {
          fields: { header, version: field('string', 2), dbSize: field('int64', 3), dbSizeInUse: field('int64', 9) },
        },
      },
    },
  },
};
