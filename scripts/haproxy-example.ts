import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXAMPLE_HAPROXY_CONFIG } from './lib/haproxy-config';

/** `npm run haproxy-example`: writes deploy/haproxy.cfg from the same template the HAProxy test runs. */
writeFileSync(join(__dirname, '..', '..', 'deploy', 'haproxy.cfg'), EXAMPLE_HAPROXY_CONFIG);
