import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { controlFile, postinst, postrm, prerm } from '../../scripts/lib/debian-package';

/** The package's metadata and maintainer scripts (test/integration/debian-package.int-spec.ts installs and purges it). */
const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
};

describe('the Debian package texts', () => {
  const control = controlFile({
    version: manifest.version,
    description: 'PostgreSQL high-availability agent: details',
    installedSizeKiB: 1234,
  });
  const field = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(control)?.[1];

  it('declares the Node line package.json requires, python3 for the fence and PostgreSQL', () => {
    const lowest = /^\^?(\d+\.\d+)/.exec(manifest.engines.node)?.[1];
    expect(field('Depends')).toBe(`nodejs (>= ${lowest}) | node-runtime, python3, postgresql-15 | postgresql`);
    expect({ version: field('Version'), architecture: field('Architecture'), size: field('Installed-Size') }).toEqual({
      version: manifest.version,
      architecture: 'all',
      size: '1234',
    });
  });

  it('never enables, starts or restarts the agent from a maintainer script; stops it only on removal', () => {
    // Commands only: postinst's messages tell the operator what to run.
    const commands = (script: string) =>
      script
        .split('\n')
        .filter((line) => !line.trim().startsWith('echo'))
        .join('\n');
    for (const script of [postinst(), postrm()])
      expect(commands(script)).not.toMatch(/systemctl (enable|start|restart)|deb-systemd-invoke/);
    expect(postinst()).toContain('systemctl enable --now stator');
    expect(prerm()).toMatch(/if \[ "\$1" = remove \].*\n\s+systemctl stop stator\.service/);
  });

  it('removes on purge only directories left empty, never a data directory', () => {
    expect(postrm()).not.toMatch(/rm -r|rm -fr|rm -rf/);
    expect(postrm()).toContain('rmdir /var/lib/stator');
  });
});
