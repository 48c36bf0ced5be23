import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The official CycloneDX 1.6 JSON schema (vendored, see test/fixtures/cyclonedx/README.md) with
 * the two schemas it references. The schema is draft-07 and uses keywords Ajv's strict mode
 * rejects, hence strict: false; formats (iri-reference, idn-email, date-time...) are checked.
 */
const dir = join(__dirname, '..', 'fixtures', 'cyclonedx');
const load = (file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;

let validate: ReturnType<Ajv['compile']> | null = null;

function validator() {
  if (validate) return validate;
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  // Formats of draft 2019 that ajv-formats lacks; no AGBOM field uses them (urls, emails).
  ajv.addFormat('iri-reference', true);
  ajv.addFormat('idn-email', /@/);
  // The main schema refers to the local copies by file name, relative to its own $id.
  for (const file of ['spdx.SNAPSHOT.schema.json', 'jsf-0.82.SNAPSHOT.schema.json'])
    ajv.addSchema({ ...load(file), $id: `http://cyclonedx.org/schema/${file}` });
  validate = ajv.compile(load('bom-1.6.SNAPSHOT.schema.json'));
  return validate;
}

/** The schema violations of a document; an empty list means it is valid CycloneDX 1.6. */
export function validateCycloneDx16(doc: unknown): string[] {
  const check = validator();
  if (check(doc)) return [];
  return (check.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`);
}
