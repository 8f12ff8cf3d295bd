export { renderReportHtml, renderReportSvg, writeReport, writeResult, reportFormat } from './render';
export { reportCommand } from './command';
