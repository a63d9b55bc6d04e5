export * from '../../scripts/lib/ports';
