/** The provider kinds a credential may name (adapters live in infra/providers). */
export const PROVIDERS = ['openai', 'anthropic', 'openai_compatible', 'mock'] as const;
export type Provider = (typeof PROVIDERS)[number];
