// Lint rules, including the dependency rule: imports point inward
// (api -> domain, infra; workers -> domain, infra; infra -> domain; domain -> nothing).
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');

const vendorSdks = [
  'koa',
  '@koa/*',
  'bullmq',
  'ioredis',
  '@mikro-orm/*',
  'pg',
  'pino',
  'undici',
  '@opentelemetry/*',
];
const layer = (files, forbidden, message) => ({
  files,
  rules: {
    '@typescript-eslint/no-restricted-imports': ['error', { patterns: [{ group: forbidden, message }] }],
  },
});

module.exports = tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'coverage/**', 'dist/**', 'client/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        console: 'readonly',
        __dirname: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  layer(
    ['domain/**/*.ts'],
    [...vendorSdks, '**/api/**', '**/infra/**', '**/workers/**'],
    'domain/ is plain TypeScript: no vendor SDKs, no outer layers',
  ),
  layer(['infra/**/*.ts'], ['**/api/**', '**/workers/**'], 'infra/ may import domain/ only'),
  layer(['api/**/*.ts'], ['**/workers/**'], 'api/ may import domain/ and infra/ only'),
  layer(['workers/**/*.ts'], ['**/api/**'], 'workers/ may import domain/ and infra/ only'),
  layer(
    ['client/src/**/*.ts'],
    ['**/api/**', '**/domain/**', '**/infra/**', '**/workers/**', ...vendorSdks],
    'client/ is its own package: it speaks HTTP to the service and imports none of its code',
  ),
);
