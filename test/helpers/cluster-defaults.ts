import { addClusterDefaults } from '../../scripts/lib/node-config';

// Loaded before every integration spec (jest.config.js). No test cluster's data must survive an OS crash (a power
// cut in a test kills processes; the page cache stays), so nothing waits for the disk the machine's other jobs share:
// no fsync by the server, none at the end of initdb or of a replica's pg_basebackup.
addClusterDefaults({ parameters: { fsync: 'off' }, initdb: ['no-sync'], basebackup: ['no-sync'] });
