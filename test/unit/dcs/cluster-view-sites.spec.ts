import { parseClusterView } from '../../../src/dcs/cluster-view';

describe("the keys of a site-aware cluster, as Patroni's branch writes them", () => {
  it('reads site in /failover, current_site in /status and site in a member key', () => {
    const view = parseClusterView(
      [
        { key: 'failover', value: '{"leader":"postgres-0","site":"dc2"}', modRevision: '7' },
        {
          key: 'status',
          value: '{"optime":67108960,"retain_slots":["postgres_0"],"current_site":"dc1"}',
          modRevision: '8',
        },
        {
          key: 'members/postgres-0',
          value:
            '{"conn_url":"postgres://127.0.0.1:5432/postgres","api_url":"http://127.0.0.1:8008/patroni","state":"running","role":"primary","version":"4.1.0","site":"dc1"}',
          modRevision: '9',
        },
      ],
      '10',
    );
    expect(view.failover?.value).toEqual({ leader: 'postgres-0', site: 'dc2' });
    expect(view.status?.value.current_site).toBe('dc1');
    expect(view.members[0].data.site).toBe('dc1');
  });
});
