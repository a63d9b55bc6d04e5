export * from '../../scripts/lib/tmp';
