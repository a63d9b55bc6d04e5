import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPOSE_HAPROXY_CONFIG, EXAMPLE_HAPROXY_CONFIG } from './lib/haproxy-config';

/** `npm run haproxy-example`: writes deploy/haproxy.cfg and deploy/haproxy-compose.cfg from the template the HAProxy test runs. */
const deploy = join(__dirname, '..', '..', 'deploy');
writeFileSync(join(deploy, 'haproxy.cfg'), EXAMPLE_HAPROXY_CONFIG);
writeFileSync(join(deploy, 'haproxy-compose.cfg'), COMPOSE_HAPROXY_CONFIG);
