// Defaults for every test process; a test file may override them for the app it starts.
process.env.LOG_LEVEL ??= 'silent';
process.env.NODE_ENV = 'test';
export {};
