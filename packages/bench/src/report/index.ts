export { renderReportHtml, renderReportSvg, writeReport, readResult, reportFormat } from './render';
export type { ReportRun } from './render';
export { reportCommand } from './command';
