// Validates an OpenAPI document read from stdin with @seriousme/openapi-schema-validator (an ES
// module, which Jest's CommonJS runtime cannot load) and prints its verdict as JSON.
import { Validator } from '@seriousme/openapi-schema-validator';

let text = '';
process.stdin.on('data', (chunk) => (text += chunk));
process.stdin.on('end', async () => {
  const result = await new Validator().validate(JSON.parse(text));
  process.stdout.write(JSON.stringify(result));
});
