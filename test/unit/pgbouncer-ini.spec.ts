import { localPgbouncerIni, shippedPgbouncerIni } from '../../scripts/lib/pgbouncer';

const local = { dir: '/run/bouncer', listenPort: 16432, upstreamPort: 15000, user: 'postgres', password: 'secret' };

describe('the shipped deploy/pgbouncer.ini, set for a local run', () => {
  const shipped = shippedPgbouncerIni();
  const rendered = localPgbouncerIni(shipped, local);

  it('replaces only the lines marked "; local"', () => {
    const changed = shipped
      .split('\n')
      .flatMap((line, i) => (rendered.split('\n')[i] === line ? [] : [rendered.split('\n')[i]]));
    expect(changed).toEqual([
      '* = host=127.0.0.1 port=15000',
      'listen_port = 16432',
      'unix_socket_dir = /run/bouncer',
      'logfile = /run/bouncer/pgbouncer.log',
      'pidfile = /run/bouncer/pgbouncer.pid',
      'auth_file = /run/bouncer/userlist.txt',
    ]);
  });

  it('keeps the settings that shorten an outage', () => {
    for (const line of [
      'server_check_delay = 0',
      'server_login_retry = 1',
      'server_connect_timeout = 3',
      'query_wait_timeout = 10',
      'pool_mode = transaction',
    ]) {
      expect(rendered.split('\n')).toContain(line);
    }
  });

  it('names the key when a line marked local has no local value', () => {
    expect(() => localPgbouncerIni('; local\nmax_client_conn = 5\n', local)).toThrow(
      '"max_client_conn" is marked local but has no local value',
    );
  });

  it('names the keys the file does not mark local', () => {
    expect(() => localPgbouncerIni('; local\nlisten_port = 6432\n', local)).toThrow(
      /no "; local" line for \*, listen_addr, unix_socket_dir, logfile, pidfile, auth_file/,
    );
  });
});
