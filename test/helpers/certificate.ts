import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** A self-signed certificate and its key for one day, made by openssl in `dir` (key.pem, cert.pem). */
export function selfSignedCertificate(
  dir: string,
  { cn = 'localhost', altNames }: { cn?: string; altNames?: string } = {},
): { key: string; cert: string } {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1'];
  args.push('-subj', `/CN=${cn}`);
  if (altNames) args.push('-addext', `subjectAltName=${altNames}`);
  execFileSync('openssl', args, { stdio: 'ignore' });
  return { key, cert };
}
