export * from '../../scripts/lib/wait-for';
