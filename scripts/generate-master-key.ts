// Prints a new CP_MASTER_KEY (base64 of 32 random bytes) for production configuration.
import { randomBytes } from 'node:crypto';
import { noArguments } from './cli-usage';

noArguments(`
Usage: npm run master-key:generate

Prints a new CP_MASTER_KEY: base64 of 32 random bytes. Keep it in your secret store; losing it
loses every stored provider credential. To rotate, see npm run master-key:reseal -- --help.
`);
console.log(randomBytes(32).toString('base64'));
